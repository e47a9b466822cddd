# Functions shared by the .deb and .rpm maintainer scripts. scripts/package.sh puts
# each script together as: a `#!/bin/sh` line, `yuzu_version=...` (the agent version
# of this package), this file, then the script's own part (deb-postinst.sh, ...), so
# that every script stands alone: a postrm runs after the package's files are gone.
# POSIX sh only (dash on Debian, bash on RPM systems, busybox in the test root), and
# every external command is one that a minimal system has.
#
# The layout and why (docs/packages.md): the package owns /usr/lib/yuzu (this
# version's agent and plugins), the unit, /usr/bin/yuzu-agent and /etc/yuzu/agent.yaml;
# the agent owns /opt/yuzu, which these scripts create and fill: the agent versions
# under /opt/yuzu/agent/<version>, the `current` and `previous` links, and the plugin
# dir /opt/yuzu/plugins. /var/lib/yuzu is the data dir.

lib=/usr/lib/yuzu
opt=/opt/yuzu
agents=$opt/agent
plugin_dir=$opt/plugins
data_dir=/var/lib/yuzu
config=/etc/yuzu/agent.yaml
unit=yuzu-agent.service
# How long the agent may take, after `systemctl restart`, to answer `yuzu-agent
# status` (its status socket): seconds. An agent that does not answer by then fails
# the installation.
start_wait=${YUZU_START_WAIT:-90}

say() { echo "yuzu-agent: $*" >&2; }

# systemd_running tells whether systemd is this machine's init (not merely installed:
# a chroot, a container build or an installer has systemctl but no systemd to ask).
systemd_running() {
	[ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1
}

# relink NAME TARGET points $agents/NAME at TARGET atomically: a new link under a
# temporary name, renamed over the old one, so that a reader (systemd starting the
# service) sees either the old link or the new one, never none.
relink() {
	ln -sfn "$2" "$agents/.$1.new"
	mv -Tf "$agents/.$1.new" "$agents/$1"
}

# install_agent copies this package's agent into $agents/<version>/ and switches
# `current` to it; `previous` becomes what `current` was. The copy is written under a
# temporary name and renamed, so a running agent of the same version keeps its file.
install_agent() {
	dir=$agents/$yuzu_version
	mkdir -p "$dir"
	chmod 0755 "$opt" "$agents" "$dir"
	chown 0:0 "$opt" "$agents" "$dir"
	cp "$lib/yuzu-agent" "$dir/.yuzu-agent.new"
	chown 0:0 "$dir/.yuzu-agent.new"
	chmod 0755 "$dir/.yuzu-agent.new"
	mv -f "$dir/.yuzu-agent.new" "$dir/yuzu-agent"
	old=$(readlink "$agents/current" 2>/dev/null || true)
	if [ -n "$old" ] && [ "$old" != "$yuzu_version" ]; then
		relink previous "$old"
	fi
	relink current "$yuzu_version"
	say "agent $yuzu_version installed in $dir (current; previous: $(readlink "$agents/previous" 2>/dev/null || echo none))"
	# Only the current and the previous version are kept.
	prev=$(readlink "$agents/previous" 2>/dev/null || true)
	for d in "$agents"/*; do
		# current and previous are links; only version directories go.
		[ -d "$d" ] && [ ! -L "$d" ] || continue
		v=$(basename "$d")
		if [ "$v" != "$yuzu_version" ] && [ "$v" != "$prev" ]; then
			rm -rf "${agents:?}/${v:?}"
			say "removed agent $v (neither current nor previous)"
		fi
	done
}

# install_plugins installs the plugins this package ships into the plugin dir with the
# agent itself, which checks each one, trial-starts it and records it in its catalog
# (catalog.json, docs/agent.md "Plugin catalog and signatures"): a plugin whose
# installed version is the same or newer (the fleet may have upgraded it) is kept. A
# running agent on the same data dir takes the change at once.
install_plugins() {
	mkdir -p "$data_dir"
	chmod 0700 "$data_dir"
	rc=0
	"$agents/current/yuzu-agent" --plugin-dir "$plugin_dir" --data-dir "$data_dir" --log-level warn \
		plugins add --if-newer "$lib"/plugins/yuzu-plugin-* || rc=$?
	if [ "$rc" != 0 ]; then
		say "FAILED: the shipped plugins could not be installed into $plugin_dir (exit $rc, above)"
		return 1
	fi
}

# in_service_cgroup tells whether this script runs inside the service's own cgroup
# (the agent, or a plugin, running the package manager): restarting the service would
# kill this script along with it.
in_service_cgroup() {
	grep -q "/$unit\(/\|\$\)" /proc/self/cgroup 2>/dev/null
}

# agent_answers tells whether a running agent answers `yuzu-agent status` on its
# status socket (exit 3 is "no agent answers"; 0 and 1 are answers).
agent_answers() {
	rc=0
	"$agents/current/yuzu-agent" --config "$config" status >/dev/null 2>&1 || rc=$?
	[ "$rc" != 3 ]
}

# start_service enables the service and restarts it (a restart, not a try-restart:
# the new version must run now, whether the old one ran or not), then waits until the
# agent answers, the service is active and systemd has not had to restart it. It fails
# when that does not happen: a package whose agent cannot run must not report success.
# Then `current` is switched back to the previous version, which is started again, so
# the machine keeps a working agent while the failure is reported.
start_service() {
	if ! systemd_running; then
		if command -v systemctl >/dev/null 2>&1; then
			systemctl enable "$unit" >/dev/null 2>&1 || say "could not enable $unit (systemctl enable failed)"
		fi
		say "systemd is not running here: $unit is enabled but not started"
		return 0
	fi
	if [ -e "/etc/systemd/system/$unit" ]; then
		say "warning: /etc/systemd/system/$unit (written by 'yuzu-agent service install') overrides the packaged unit; remove it to use the package's"
	fi
	systemctl daemon-reload
	systemctl enable "$unit" >/dev/null 2>&1
	if in_service_cgroup; then
		# systemd-run makes the restart a unit of its own, outside this cgroup, 3 s
		# from now, so that this script and the package manager that runs it can end
		# first (the restart ends every process in the service's cgroup). This script
		# cannot see its outcome; the journal of yuzu-agent.service tells.
		systemd-run --on-active=3 --collect --quiet systemctl restart "$unit"
		say "running inside $unit: its restart is handed to systemd, in 3 s; check it with 'systemctl status $unit'"
		return 0
	fi
	why=""
	if ! systemctl restart "$unit"; then
		why="systemctl restart failed"
	else
		waited=0
		until agent_answers; do
			# An agent that exits at start leaves the unit activating (auto-restart) or
			# failed at once: no need to wait for the answer it will never give.
			state=$(systemctl is-active "$unit" 2>/dev/null || true)
			restarts=$(systemctl show -p NRestarts --value "$unit" 2>/dev/null || echo 0)
			if [ "$state" != active ] || [ "${restarts:-0}" != 0 ]; then
				why="the service is $state after $waited s (systemd restarted it ${restarts:-0} times)"
				break
			fi
			if [ "$waited" -ge "$start_wait" ]; then
				why="the agent did not answer 'yuzu-agent status' within ${start_wait}s"
				break
			fi
			sleep 1
			waited=$((waited + 1))
		done
		if [ -z "$why" ]; then
			# Still running a moment later, in the process systemd started.
			sleep 2
			state=$(systemctl is-active "$unit" 2>/dev/null || true)
			restarts=$(systemctl show -p NRestarts --value "$unit" 2>/dev/null || echo 0)
			if [ "$state" != active ]; then
				why="the service is $state"
			elif [ "${restarts:-0}" != 0 ]; then
				why="systemd restarted it $restarts times"
			fi
		fi
	fi
	if [ -z "$why" ]; then
		say "$unit runs agent $yuzu_version (pid $(systemctl show -p MainPID --value "$unit"))"
		return 0
	fi
	say "FAILED: $unit does not run agent $yuzu_version: $why"
	systemctl status --no-pager --lines=20 "$unit" >&2 || true
	prev=$(readlink "$agents/previous" 2>/dev/null || true)
	if [ -n "$prev" ] && [ "$prev" != "$yuzu_version" ] && [ -x "$agents/$prev/yuzu-agent" ]; then
		relink current "$prev"
		if systemctl restart "$unit"; then
			say "rolled back: $unit runs the previous agent $prev again; agent $yuzu_version stays in $agents/$yuzu_version"
		else
			say "rolled back to the previous agent $prev, but it did not start either"
		fi
	fi
	return 1
}

# stop_service stops and disables the service on a real removal.
stop_service() {
	if systemd_running; then
		systemctl disable --now "$unit" >/dev/null 2>&1 || say "warning: could not stop and disable $unit"
	elif command -v systemctl >/dev/null 2>&1; then
		systemctl disable "$unit" >/dev/null 2>&1 || true
	fi
}

daemon_reload() {
	if systemd_running; then
		systemctl daemon-reload || true
	fi
}
