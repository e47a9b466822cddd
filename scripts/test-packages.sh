#!/usr/bin/env bash
# `make test-packages` (also a step of `make test`): the packages `make package` builds,
# installed, upgraded and removed for real (docs/packages.md, "How the packages are
# tested"). Three legs, each bounded, each ending in one summary line:
#
#   rpm  the .rpm installed, upgraded and erased with Debian's rpm into a throwaway root
#        (a static busybox for the scriptlets' shell, a systemctl stub that records each
#        call and runs the agent itself): the scriptlets, the agent-owned tree, the
#        plugins added by the agent, a service an upgrade does not disable, rpm -V
#   msi  the .msi installed, upgraded (major upgrade) and uninstalled with msiexec under
#        Wine, in the Windows leg's prefix: the files, the service registered and
#        started by Wine's service manager, the agent answering a test fleet server on
#        loopback, agent.yaml and the data kept across the upgrade, the service gone
#        after the uninstall
#   deb  the .deb under real systemd: a Debian 12 system made with mmdebstrap (cached
#        outside the clone, keyed by its recipe) booted in QEMU with Debian's cloud
#        kernel; inside, scripts/packages-vm.sh installs, upgrades (and fails an
#        upgrade whose agent exits at start), removes and purges it
#
# Each leg builds what it installs: this version (VERSION) and a second, newer one
# (its patch number plus one) with scripts/package.sh; the deb leg also a third whose
# agent is a test double that exits at start. PACKAGE_LEGS="rpm msi" narrows it.
#
# Usage: scripts/test-packages.sh [SUMMARY_FILE]   (make test passes its summary file)
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=packages-lib.sh
source "$ROOT/scripts/packages-lib.sh"

outer=${1:-}
legs=${PACKAGE_LEGS:-"rpm msi deb"}
# The cache of the deb leg's Debian system and kernel: outside the clone, so that a
# fresh clone on the same machine (CI's) finds it.
CACHE=${YUZU_TEST_CACHE:-/var/cache/yuzu-test}
LEG=packages
record() {
	say "$1"
	if [[ -n $outer ]]; then echo "$1" >>"$outer"; fi
}

work=$(mktemp -d)
cleanup() {
	ts_stop
	if [[ -n ${wine_up:-} ]]; then
		timeout 30 env "${wine_env[@]}" "$WINESERVER" -k >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

v1=$(cat "$ROOT/VERSION")
IFS=. read -r major minor patch <<<"${v1%%-*}"
v2=$major.$minor.$((patch + 1))
v3=$major.$minor.$((patch + 2))
# The deb leg's self-update: v4, a real agent the fleet server offers as a signed bundle,
# and v5, a bundle whose agent passes its self-check and exits at start.
v4=$major.$minor.$((patch + 3))
v5=$major.$minor.$((patch + 4))

failed=0
# leg_end NAME STARTED: the leg's summary line, from its checks.
leg_end() {
	local line="packages $1: $checks_passed passed, $checks_failed failed ($((SECONDS - $2))s)"
	if ((checks_failed == 0 && checks_passed > 0)); then
		record "PASS $line"
	else
		record "FAIL $line"
		failed=1
	fi
	checks_passed=0 checks_failed=0
}

# ---------------------------------------------------------------------------------
# rpm: a throwaway root. The scriptlets run there (rpm chroots into it), with a static
# busybox as /bin/sh and its tools, /proc and /dev bound in; /run/systemd/system exists
# and systemctl is a stub that records each call, keeps an enabled flag and, for start
# and restart, runs the agent itself, so the scripts' path with systemd is the one
# taken. Everything runs in private mount and PID namespaces: no mount outlives the
# leg, and every agent the stub started dies with it.

# rpm_root DIR V1 V2 V3 RPM1 RPM2 RPM3 (in the namespaces): the leg's checks.
rpm_root() {
	local root=$1 v1=$2 v2=$3 v3=$4 rpm1=$5 rpm2=$6 rpm3=$7 out rc
	LEG=rpm
	mkdir -p "$root"/{bin,usr/bin,proc,dev,tmp,run/systemd/system,var/log,var/lib,etc}
	chmod 1777 "$root/tmp"
	cp /bin/busybox "$root/bin/busybox"
	# Relative links: `busybox --install` links to the path busybox was run from, which
	# is not one inside the root.
	local applet
	for applet in $("$root/bin/busybox" --list); do
		[[ -e $root/bin/$applet ]] || ln -s busybox "$root/bin/$applet"
	done
	mount -t proc proc "$root/proc"
	mount --rbind /dev "$root/dev"
	cat >"$root/usr/bin/systemctl" <<-'EOF'
		#!/bin/sh
		# systemctl stub of the rpm leg (scripts/test-packages.sh): records each call in
		# /var/log/systemctl.log, keeps yuzu-agent.service's enabled flag, and for start
		# and restart runs the agent itself, as the unit's ExecStart would.
		echo "systemctl $*" >>/var/log/systemctl.log
		state=/var/lib/systemctl-stub
		mkdir -p "$state"
		pidf=$state/yuzu-agent.pid
		running() { [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null; }
		stop() {
			if running; then
				kill "$(cat "$pidf")"
				i=0
				while running && [ "$i" -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
			fi
			rm -f "$pidf"
		}
		start() {
			setsid /opt/yuzu/agent/current/yuzu-agent --config /etc/yuzu/agent.yaml run \
				>>/var/log/yuzu-agent.log 2>&1 </dev/null &
			echo $! >"$pidf"
		}
		case "$1" in
		enable) touch "$state/enabled" ;;
		disable)
			rm -f "$state/enabled"
			[ "$2" = --now ] && stop
			;;
		restart) stop; start ;;
		start) running || start ;;
		stop) stop ;;
		is-active) if running; then echo active; else echo inactive; exit 3; fi ;;
		show)
			case "$3" in
			NRestarts) echo 0 ;;
			SubState) if running; then echo running; else echo dead; fi ;;
			MainPID) if running; then cat "$pidf"; else echo 0; fi ;;
			esac
			;;
		status) if running; then echo "yuzu-agent.service (stub): running, pid $(cat "$pidf")"; else echo "yuzu-agent.service (stub): dead"; fi ;;
		esac
		exit 0
	EOF
	chmod 0755 "$root/usr/bin/systemctl"
	in_root() { chroot "$root" "$@"; }
	agent_pid() { cat "$root/var/lib/systemctl-stub/yuzu-agent.pid" 2>/dev/null || echo none; }

	check "rpm --initdb" rpm --root "$root" --initdb
	echo "== rpm -i yuzu-agent $v1"
	rc=0
	rpm --root "$root" -i --nodeps "$rpm1" || rc=$?
	expect "rpm -i $v1 exits 0" "$rc" 0
	expect "rpm -q" "$(rpm --root "$root" -q --qf '%{VERSION}' yuzu-agent)" "$v1"
	expect "current -> $v1" "$(readlink "$root/opt/yuzu/agent/current")" "$v1"
	check "the agent is in its own tree, root's, 0755" test "$(stat -c '%U %a' "$root/opt/yuzu/agent/$v1/yuzu-agent")" = "root 755"
	out=$(in_root /usr/bin/yuzu-agent plugins 2>&1 || true)
	check "the agent installed the shipped plugins in its catalog" bash -c "grep -q '^filesystem ' <<<\"\$1\" && grep -q '^firewall ' <<<\"\$1\" && grep -q '^tags ' <<<\"\$1\"" - "$out"
	check "the service is enabled" test -e "$root/var/lib/systemctl-stub/enabled"
	check "the service was restarted (not try-restart)" grep -qx "systemctl restart yuzu-agent.service" "$root/var/log/systemctl.log"
	rc=0
	in_root /usr/bin/yuzu-agent status >/dev/null 2>&1 || rc=$?
	check "the running agent answers status (exit $rc: 1 is 'no fleet server', 3 'no agent')" test "$rc" = 1 -o "$rc" = 0
	check "rpm -V: nothing modified" test -z "$(rpm --root "$root" -V yuzu-agent)"
	check "exec tags set through /usr/bin/yuzu-agent" in_root /usr/bin/yuzu-agent exec tags set key=env value=prod
	local id pid1
	id=$(cat "$root/var/lib/yuzu/agent_id" 2>/dev/null)
	pid1=$(agent_pid)
	echo "# edited by the rpm leg: kept across upgrades" >>"$root/etc/yuzu/agent.yaml"
	: >"$root/var/log/systemctl.log"

	echo "== rpm -U yuzu-agent $v2"
	rc=0
	rpm --root "$root" -U --nodeps "$rpm2" || rc=$?
	expect "rpm -U $v2 exits 0" "$rc" 0
	expect "rpm -q after the upgrade" "$(rpm --root "$root" -q --qf '%{VERSION}' yuzu-agent)" "$v2"
	expect "current -> $v2" "$(readlink "$root/opt/yuzu/agent/current")" "$v2"
	expect "previous -> $v1" "$(readlink "$root/opt/yuzu/agent/previous")" "$v1"
	check "the service is still enabled after the upgrade" test -e "$root/var/lib/systemctl-stub/enabled"
	check "no scriptlet disabled or stopped the service during the upgrade" bash -c "! grep -E 'disable|stop' '$root/var/log/systemctl.log'"
	check "the upgrade restarted the service" grep -qx "systemctl restart yuzu-agent.service" "$root/var/log/systemctl.log"
	check "a new agent process runs ($pid1 before, $(agent_pid) now)" test "$(agent_pid)" != "$pid1" -a "$(agent_pid)" != none
	out=$(in_root /usr/bin/yuzu-agent status 2>&1 || true)
	check "status reports agent $v2" grep -q "^agent: *$v2 " <<<"$out"
	check "the edited configuration is kept" grep -q "kept across upgrades" "$root/etc/yuzu/agent.yaml"
	expect "the agent id is kept" "$(cat "$root/var/lib/yuzu/agent_id" 2>/dev/null)" "$id"
	check "the tags are kept" bash -c "chroot '$root' /usr/bin/yuzu-agent exec tags get key=env | grep -qx 'tag|env|prod'"
	out=$(rpm --root "$root" -V yuzu-agent | grep -v ' c /etc/yuzu/agent.yaml$' || true)
	check "rpm -V: nothing modified but the edited configuration" test -z "$out"

	# RPM does not fail a transaction whose %post fails: it warns and exits 0, and the
	# package stays installed. The script's own failure line and the rollback are what
	# can be checked.
	echo "== rpm -U yuzu-agent $v3, whose agent exits at start"
	local pid2
	pid2=$(agent_pid)
	rc=0
	out=$(rpm --root "$root" -U --nodeps "$rpm3" 2>&1) || rc=$?
	printf '%s\n' "$out"
	check "the %post says the agent $v3 does not run" grep -q "FAILED: yuzu-agent.service does not run agent $v3" <<<"$out"
	check "rpm reports the failed scriptlet (its exit status: $rc)" grep -q "%post(yuzu-agent-$v3-1.x86_64) scriptlet failed" <<<"$out"
	expect "current -> $v2 again (rolled back)" "$(readlink "$root/opt/yuzu/agent/current")" "$v2"
	out=$(in_root /usr/bin/yuzu-agent status 2>&1 || true)
	check "the rolled-back agent $v2 runs and answers (pid $pid2 before, $(agent_pid) now)" grep -q "^agent: *$v2 " <<<"$out"
	: >"$root/var/log/systemctl.log"

	echo "== rpm -e yuzu-agent"
	rc=0
	rpm --root "$root" -e yuzu-agent || rc=$?
	expect "rpm -e exits 0" "$rc" 0
	check "the erase stopped and disabled the service" grep -qx "systemctl disable --now yuzu-agent.service" "$root/var/log/systemctl.log"
	check "the service is no longer enabled" test ! -e "$root/var/lib/systemctl-stub/enabled"
	check "no agent runs" test ! -e "$root/var/lib/systemctl-stub/yuzu-agent.pid"
	check "/opt/yuzu is gone" test ! -e "$root/opt/yuzu"
	check "/usr/bin/yuzu-agent is gone" test ! -e "$root/usr/bin/yuzu-agent" -a ! -L "$root/usr/bin/yuzu-agent"
	check "the data dir is kept (RPM has no purge)" test -s "$root/var/lib/yuzu/agent_id"
	check "the edited configuration is kept as agent.yaml.rpmsave" grep -q "kept across upgrades" "$root/etc/yuzu/agent.yaml.rpmsave"
	echo "rpm-root: $checks_passed $checks_failed"
}

leg_rpm() {
	local started=$SECONDS rc=0 line
	printf '\n==== packages: rpm\n'
	if [[ $(uname -m) != x86_64 ]]; then
		record "SKIP packages rpm: cannot run here: it installs the amd64 package, and this machine is $(uname -m)"
		return
	fi
	bounded "rpm leg" 600 unshare --mount --pid --fork --kill-child "$0" --rpm-root "$work/rpmroot" "$v1" "$v2" "$v3" \
		"$work/$v1/yuzu-agent_${v1}_amd64.rpm" "$work/$v2/yuzu-agent_${v2}_amd64.rpm" "$work/$v3/yuzu-agent_${v3}_amd64.rpm" \
		>"$work/rpm.log" 2>&1 || rc=$?
	cat "$work/rpm.log"
	line=$(grep '^rpm-root: ' "$work/rpm.log" | tail -n 1)
	if [[ -z $line ]]; then
		fail "the rpm leg ran to its end" "exit $rc (above)"
	else
		read -r _ p f <<<"$line"
		checks_passed=$p checks_failed=$f
		((rc == 0)) || fail "the rpm leg exited 0" "exit $rc"
	fi
	leg_end rpm "$started"
}

# ---------------------------------------------------------------------------------
# msi: the Windows leg's Wine prefix (scripts/wine-setup.sh), one wine server for the
# leg, every Wine command bounded and with its output in a file (docs/windows.md: a
# piped first process can hang the pipe).
wine_do_to() {
	local out=$1 limit=$2
	shift 2
	timeout --kill-after=10 "$limit" env "${wine_env[@]}" "$WINE64" "$@" </dev/null >"$out" 2>&1
}

leg_msi() {
	local started=$SECONDS rc p out id pid1 pid2
	LEG=msi
	printf '\n==== packages: msi\n'
	# shellcheck source=wine.sh
	source "$ROOT/scripts/wine.sh"
	LEG=msi
	if ! bounded "set up Wine" 900 scripts/wine-setup.sh; then
		fail "Wine is set up" "scripts/wine-setup.sh failed (above)"
		leg_end msi "$started"
		return
	fi
	p=$WINE_DIR/prefix/drive_c
	timeout 30 env "${wine_env[@]}" "$WINESERVER" -k >/dev/null 2>&1 || true
	wine_up=1
	bounded "start the wine server" 60 env "${wine_env[@]}" "$WINESERVER" -p </dev/null >/dev/null 2>&1 || true
	bounded "start the Wine services" 120 env "${wine_env[@]}" "$WINE64" wineboot </dev/null >/dev/null 2>&1 || true
	local msi1 msi2
	msi1=$(winepath "$work/$v1/yuzu-agent-$v1-x64.msi") msi2=$(winepath "$work/$v2/yuzu-agent-$v2-x64.msi")
	# What an earlier, interrupted run left: its product, its service, its files.
	wine_do_to "$work/msi-clean.log" 120 msiexec /x "$msi2" /qn || true
	wine_do_to "$work/msi-clean.log" 120 msiexec /x "$msi1" /qn || true
	wine_do_to "$work/msi-clean.log" 60 sc delete yuzu-agent || true
	rm -rf "$p/Program Files/yuzu" "$p/ProgramData/yuzu" "$p/users/Public/yuzu"

	ts_start "$work/msi-fleet" "$work/yuzu-testserver" || fail "the test fleet server starts"

	echo "== msiexec /i yuzu-agent-$v1-x64.msi"
	rc=0
	wine_do_to "$work/msi-install.out" 300 msiexec /i "$msi1" /qn /l*v "$(winepath "$work/msi-install.log")" || rc=$?
	expect "msiexec /i $v1 exits 0" "$rc" 0
	((rc == 0)) || tr -d '\000' <"$work/msi-install.log" | grep -a -E 'Return value [03]|rror' | tail -n 20
	check "yuzu-agent.exe is in Program Files\\yuzu" test -f "$p/Program Files/yuzu/yuzu-agent.exe"
	check "the shipped plugin builds are in Program Files\\yuzu\\plugins" test -f "$p/Program Files/yuzu/plugins/yuzu-plugin-tags.exe" -a -f "$p/Program Files/yuzu/plugins/yuzu-plugin-filesystem.exe" -a -f "$p/Program Files/yuzu/plugins/yuzu-plugin-firewall.exe"
	check "the agent installed them into its catalog in C:\\ProgramData\\yuzu\\plugins" bash -c "grep -q '\"filesystem\": {' '$p/ProgramData/yuzu/plugins/catalog.json' && grep -q '\"firewall\": {' '$p/ProgramData/yuzu/plugins/catalog.json' && grep -q '\"tags\": {' '$p/ProgramData/yuzu/plugins/catalog.json'"
	check "agent.yaml is written from the default, with the plugin dir" bash -c "head -n \$(wc -l <'$ROOT/packaging/windows/agent.yaml') '$p/ProgramData/yuzu/agent.yaml' | cmp -s - '$ROOT/packaging/windows/agent.yaml' && tr -d '\\r' <'$p/ProgramData/yuzu/agent.yaml' | grep -qxF 'plugin-dir: C:\\ProgramData\\yuzu\\plugins'"
	wine_do_to "$work/sc.out" 60 sc query yuzu-agent || true
	check "Wine's service manager runs the service" grep -q "RUNNING" "$work/sc.out"
	wine_do_to "$work/svc.out" 60 'C:\Program Files\yuzu\yuzu-agent.exe' --config 'C:\ProgramData\yuzu\agent.yaml' service status || true
	cat "$work/svc.out"
	check "service status: running, automatic start, the MSI's command line" bash -c "grep -q 'RUNNING (pid ' '$work/svc.out' && grep -qi 'auto' '$work/svc.out' && grep -qF -- '--plugin-dir \"C:\\ProgramData\\yuzu\\plugins\" run' '$work/svc.out'"
	pid1=$(sed -n 's/.*RUNNING (pid \([0-9]*\).*/\1/p' "$work/svc.out")
	wine_do_to "$work/version.out" 60 'C:\Program Files\yuzu\yuzu-agent.exe' --version || true
	check "the installed agent is $v1" grep -q "^yuzu-agent $v1 " "$work/version.out"

	# The operator's edit: the test fleet server, then a restart of the service.
	local pki
	pki=$(winepath "$work/msi-fleet/pki")
	grep -v '^tls-system-roots:' "$p/ProgramData/yuzu/agent.yaml" >"$work/agent.yaml"
	printf 'server: 127.0.0.1:%s\nca-cert: %s\\ca.pem\nclient-cert: %s\\client.pem\nclient-key: %s\\client-key.pem\n# edited by the msi leg: kept across upgrades\n' \
		"$ts_port" "$pki" "$pki" "$pki" >>"$work/agent.yaml"
	cat "$work/agent.yaml" >"$p/ProgramData/yuzu/agent.yaml"
	wine_do_to "$work/sc.out" 60 sc stop yuzu-agent || true
	wait_service STOPPED 90
	wine_do_to "$work/sc.out" 60 sc start yuzu-agent || true
	id=$(cat "$p/ProgramData/yuzu/agent_id" 2>/dev/null)
	check "the service's agent registers with the fleet server" ts_registered 120 "$id" "$v1"
	check "the service's agent answers a fleet command (tags set)" ts_send 120 tags set key=env value=prod

	echo "== msiexec /i yuzu-agent-$v2-x64.msi (major upgrade)"
	rc=0
	wine_do_to "$work/msi-upgrade.out" 300 msiexec /i "$msi2" /qn /l*v "$(winepath "$work/msi-upgrade.log")" || rc=$?
	expect "msiexec /i $v2 exits 0" "$rc" 0
	((rc == 0)) || tr -d '\000' <"$work/msi-upgrade.log" | grep -a -E 'Return value [03]|rror' | tail -n 20
	wine_do_to "$work/version.out" 60 'C:\Program Files\yuzu\yuzu-agent.exe' --version || true
	check "the installed agent is $v2" grep -q "^yuzu-agent $v2 " "$work/version.out"
	check "agent.yaml is kept" grep -q "kept across upgrades" "$p/ProgramData/yuzu/agent.yaml"
	expect "the agent id is kept" "$(cat "$p/ProgramData/yuzu/agent_id" 2>/dev/null)" "$id"
	wine_do_to "$work/svc.out" 60 'C:\Program Files\yuzu\yuzu-agent.exe' --config 'C:\ProgramData\yuzu\agent.yaml' service status || true
	pid2=$(sed -n 's/.*RUNNING (pid \([0-9]*\).*/\1/p' "$work/svc.out")
	check "the service runs a new process ($pid1 before, ${pid2:-none} now)" test -n "$pid2" -a "$pid2" != "$pid1"
	check "the upgraded agent registers as $v2, same id" ts_registered 120 "$id" "$v2"
	out=$(ts_send 120 tags get key=env || true)
	printf '%s\n' "$out"
	check "the data is kept: tags get answers env=prod" grep -q "tag|env|prod" <<<"$out"

	echo "== msiexec /x yuzu-agent-$v2-x64.msi"
	rc=0
	wine_do_to "$work/msi-remove.out" 300 msiexec /x "$msi2" /qn /l*v "$(winepath "$work/msi-remove.log")" || rc=$?
	expect "msiexec /x exits 0" "$rc" 0
	rc=0
	wine_do_to "$work/sc.out" 60 sc query yuzu-agent || rc=$?
	check "the service is deleted" bash -c "test $rc != 0 && ! grep -q RUNNING '$work/sc.out'"
	# The service manager says the service stopped when the agent reports it, and the
	# process ends a moment later; RemoveFiles right after can find yuzu-agent.exe still
	# in use (seen twice in about twenty runs, under load). A file deleted while open is
	# gone when its last handle closes: it may take the process's exit. A file the
	# installer could not delete at all is left for the next restart
	# (PendingFileRenameOperations), which wineboot -r performs.
	local i
	for ((i = 0; i < 15; i++)); do
		[[ -e "$p/Program Files/yuzu/yuzu-agent.exe" ]] || break
		sleep 1
	done
	if [[ -e "$p/Program Files/yuzu/yuzu-agent.exe" ]]; then
		wine_do_to "$work/pending.out" 60 reg query 'HKLM\System\CurrentControlSet\Control\Session Manager' /v PendingFileRenameOperations || true
		check "yuzu-agent.exe, still in use at the removal, is to be deleted at the restart" grep -qi 'yuzu-agent.exe' "$work/pending.out"
		bounded "restart Wine (wineboot -r)" 120 env "${wine_env[@]}" "$WINE64" wineboot -r </dev/null >/dev/null 2>&1 || true
		check "Program Files\\yuzu is gone after the restart" test ! -e "$p/Program Files/yuzu/yuzu-agent.exe"
	else
		pass "Program Files\\yuzu is gone"
	fi
	check "the configuration and data are kept" test -s "$p/ProgramData/yuzu/agent_id" -a -s "$p/ProgramData/yuzu/agent.yaml"
	if ((checks_failed > 0)); then
		echo "the service's log (Wine gives services C:\\users\\Public as %ProgramData%):"
		tail -n 30 "$p/users/Public/yuzu/logs/agent.log" 2>/dev/null || true
	fi
	ts_stop
	timeout 30 env "${wine_env[@]}" "$WINESERVER" -k >/dev/null 2>&1 || true
	wine_up=""
	rm -rf "$p/ProgramData/yuzu" "$p/users/Public/yuzu"
	say "msi: not shown under Wine (docs/packages.md): the protected DACL (Wine's icacls is a stub), the failure actions (Wine's service manager keeps none)"
	leg_end msi "$started"
}

# winepath PATH: the Windows name of a Linux path (drive Z: is /).
winepath() { printf 'Z:%s\n' "${1//\//\\}"; }

# wait_service STATE SECONDS: until `sc query` says STATE.
wait_service() {
	local i
	for ((i = 0; i < $2; i++)); do
		wine_do_to "$work/sc.out" 60 sc query yuzu-agent || true
		grep -q "$1" "$work/sc.out" && return 0
		sleep 1
	done
	return 1
}

# ---------------------------------------------------------------------------------
# build_packages: v1 and v2 of what each leg installs, and the deb leg's broken v3,
# in $work/VERSION/; false when something did not build.
build_packages() {
	targets=""
	[[ " $legs " == *" rpm "* ]] && targets+=" rpm-amd64"
	[[ " $legs " == *" msi "* ]] && targets+=" msi"
	[[ " $legs " == *" deb "* ]] && targets+=" deb-amd64"
	build_started=$SECONDS
	built=1
	if ! bounded "install the legs' tools" 900 scripts/deps.sh packages; then
		built=0
	fi
	for v in "$v1" "$v2"; do
		((built)) || break
		PACKAGE_TARGETS=$targets DIST_DIR=$work/$v YUZU_VERSION=$v bounded "package $v" 900 scripts/package.sh || built=0
	done
	broken=""
	[[ " $legs " == *" rpm "* ]] && broken+=" rpm-amd64"
	[[ " $legs " == *" deb "* ]] && broken+=" deb-amd64"
	if ((built)) && [[ -n $broken ]]; then
		# The test double of an agent that exits at start: it answers what the postinst
		# asks before the start (plugins add) and fails `run`, as a broken build would.
		cat >"$work/broken-agent" <<-EOF
			#!/bin/sh
			# Test double (scripts/test-packages.sh): an agent $v3 that exits at start.
			case " \$* " in
			*" run "*) echo "yuzu-agent $v3 (test double): exits at start" >&2; exit 1 ;;
			*" status "*) echo "yuzu-agent: no agent answers" >&2; exit 3 ;;
			*" --version "*) echo "yuzu-agent $v3 (test double)"; exit 0 ;;
			esac
			exit 0
		EOF
		PACKAGE_TARGETS=$broken DIST_DIR=$work/$v3 YUZU_VERSION=$v3 YUZU_PACKAGE_LINUX_AGENT=$work/broken-agent \
			bounded "package the broken $v3" 900 scripts/package.sh || built=0
	fi
	if ((built)); then
		bounded "build yuzu-testserver" 600 go build -o "$work/yuzu-testserver" ./integration/cmd/yuzu-testserver || built=0
	fi
	if ((built)) && [[ " $legs " == *" deb "* ]]; then
		# The self-update's bundles, signed by a release key made for the leg: a real
		# agent $v4 and, for the rollback, an agent $v5 that exits at start.
		cat >"$work/broken-$v5" <<-EOF
			#!/bin/sh
			# Test double (scripts/test-packages.sh): an agent $v5 whose self-check passes
			# and which exits at start.
			for a; do [ "\$a" = self-check ] && { echo "self-check passed"; exit 0; }; done
			echo "yuzu-agent $v5 (test double): exits at start" >&2
			exit 1
		EOF
		mkdir -p "$work/update"
		if ! { bounded "build yuzu-bundle" 600 go build -o "$work/yuzu-bundle" ./integration/cmd/yuzu-bundle &&
			bounded "build agent $v4" 600 env GOOS=linux GOARCH=amd64 go build -trimpath -ldflags "-s -w -X github.com/yuzugo/yuzu/agent/internal/cli.Version=$v4" -o "$work/update/yuzu-agent-$v4" ./agent/cmd/yuzu-agent &&
			"$work/yuzu-bundle" keygen "$work/update" &&
			"$work/yuzu-bundle" make -key "$work/update/release.key" -version "$v4" -os linux -arch amd64 -o "$work/update/agent-$v4.bundle" "$work/update/yuzu-agent-$v4" &&
			"$work/yuzu-bundle" make -key "$work/update/release.key" -version "$v5" -os linux -arch amd64 -o "$work/update/agent-$v5.bundle" "$work/broken-$v5"; }; then
			built=0
		fi
	fi
	say "packages: built in $((SECONDS - build_started))s"
	if ((!built)); then
		for leg in $legs; do record "FAIL packages $leg: the packages or the tools did not build (above); nothing was installed"; done
		return 1
	fi
}

# The rpm leg's inside part runs in namespaces of its own: this script again.
if [[ ${1:-} == --rpm-root ]]; then
	shift
	rpm_root "$@"
	exit $?
fi

build_packages || exit 1
for leg in $legs; do
	case $leg in
	rpm) leg_rpm ;;
	msi) leg_msi ;;
	deb) source "$ROOT/scripts/packages-deb.sh" && leg_deb ;;
	*)
		record "FAIL packages: unknown leg '$leg'"
		failed=1
		;;
	esac
done
exit "$failed"
