#!/bin/bash
# The machine of the deb leg (scripts/packages-deb.sh boots it): Debian 12 with systemd
# as PID 1 on a pure cgroup v2 kernel, this script started by the unit yuzu-test.service
# (so the package manager runs in that unit's cgroup, not the agent's). It runs, in
# turn:
#
#   the cgroup v2 tests (formerly a machine of their own, scripts/test-cgroup2.sh):
#     agent/internal/limits, every test, and integration's TestBox* tests, with
#     YUZU_BOXES_REQUIRED=1, from the root cgroup (as in a machine without systemd),
#     each part's go test -json stream on a serial port of its own (ttyS2, ttyS3);
#   the package checks: the .deb installed, upgraded, an upgrade whose agent exits at
#     start, removed, purged; one line per check on ttyS1.
#
# Each part and step has its own time limit; a part still running after its budget has
# every process's kernel stack dumped and is killed. A sign of life goes to the console
# every 10 s. The script ends with `deb-vm: done PASSED FAILED` on ttyS1 and powers
# the machine off.
#
# In /yuzu-test: the three packages (versions in ./versions: V1 the current one, V2
# newer, V3 a package whose agent exits at start), yuzu-testserver and packages-lib.sh;
# in /work: the cgroup v2 tests' binaries (limits.test, integration.test, bin/,
# test2json), built on the host (the machine has no Go).
set -uo pipefail
cd /yuzu-test || exit 1
stty -F /dev/ttyS1 raw -echo 2>/dev/null
exec >/dev/ttyS1 2>&1
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8
export DEBIAN_FRONTEND=noninteractive
# shellcheck source=packages-lib.sh
source ./packages-lib.sh
LEG=deb
read -r v1 v2 v3 v4 v5 <versions
(while :; do echo "<3>deb-vm: alive" >/dev/kmsg; sleep 10; done) &
alive=$!

finish() {
	ts_stop
	echo "deb-vm: done $checks_passed $checks_failed"
	kill "$alive" 2>/dev/null
	sync
	systemctl poweroff --force --force
}
trap finish EXIT

unit=yuzu-agent.service
prop() { systemctl show -p "$1" --value "$unit"; }
# cgroup_of PID: the process's cgroup v2 path.
cgroup_of() { sed -n 's/^0:://p' "/proc/$1/cgroup" 2>/dev/null; }
status_out() { timeout 60 yuzu-agent status 2>&1; }
# plugin_pid NAME: the plugin child's pid in `yuzu-agent status` (its PID column,
# found by its heading).
plugin_pid() {
	status_out | awk -v n="$1" '$1 == "PLUGIN" { for (i = 1; i <= NF; i++) if ($i == "PID") c = i } c && $1 == n { print $c }'
}
# dpkg_i FILE: dpkg -i, bounded, its output shown and kept in dpkg.out.
dpkg_i() {
	local rc=0
	timeout 400 dpkg -i --force-confold "$1" </dev/null >dpkg.out 2>&1 || rc=$?
	sed 's/^/    | /' dpkg.out
	return "$rc"
}

echo "== the machine"
# (Not `is-system-running --wait`: the boot includes this unit, which would wait on
# itself.)
echo "systemd: $(systemctl is-system-running 2>&1)"
check "systemd is PID 1" grep -qx systemd /proc/1/comm
expect "cgroup v2 alone is mounted" "$(stat -fc %T /sys/fs/cgroup)" cgroup2fs
echo "cgroup2: controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"

# dump says what each process waits on, in the kernel and where, through the log.
dump() {
	local p frame
	for p in /proc/[0-9]*; do
		[[ -n $(readlink "$p/exe") ]] || continue # a kernel thread
		echo "<3>cgroup2: $(cut -d' ' -f1-3 "$p/stat") waits in $(cat "$p/wchan")"
		while read -r frame; do echo "<3>cgroup2:     $frame"; done <"$p/stack"
	done >/dev/kmsg 2>&1
}
# part PORT SECONDS DIR CMD...: CMD in DIR with its output on PORT, from the root
# cgroup (where the boxes' tests ran before systemd was here: the tests make cgroups
# beside their own and enable controllers in its parent, which a service's cgroup
# holding the test itself would refuse). A part still running after SECONDS (its test
# binary's own -test.timeout has passed by then) gets every process dumped and is killed
# with its process group, and the next part runs.
part() {
	local port=$1 budget=$2 dir=$3 run dog st=0
	shift 3
	stty -F "$port" raw -echo
	(
		cd "$dir" || exit 1
		echo "$BASHPID" >/sys/fs/cgroup/cgroup.procs
		exec setsid "$@"
	) >"$port" 2>&1 &
	run=$!
	(
		sleep "$budget"
		echo "<3>cgroup2: $port still running after ${budget}s; every process:" >/dev/kmsg
		dump
		kill -9 -- "-$run"
	) &
	dog=$!
	wait "$run" || st=$?
	echo "cgroup2: exit $st $port"
	echo "<3>cgroup2: exit $st $port" >/dev/kmsg
	kill "$dog" 2>/dev/null
	wait "$dog" 2>/dev/null
}
if [[ -x /work/limits.test ]]; then
	echo "== the cgroup v2 tests"
	export YUZU_BOXES_REQUIRED=1 HOME=/tmp TMPDIR=/tmp
	part /dev/ttyS2 240 /work ./test2json -t -p github.com/yuzugo/yuzu/agent/internal/limits ./limits.test -test.v=test2json -test.timeout=3m
	# One test at a time: emulated cores are slow, and plugins of several tests starting
	# at once on a loaded host ran out of the agent's 10 s start time (seen once, load 5).
	YUZU_INTEGRATION_BIN=/work/bin part /dev/ttyS3 660 /tmp /work/test2json -t -p github.com/yuzugo/yuzu/integration /work/integration.test -test.v=test2json -test.run '^TestBox' -test.parallel=1 -test.timeout=10m
	unset YUZU_BOXES_REQUIRED
fi

echo "== dpkg -i yuzu-agent $v1"
rc=0
dpkg_i "yuzu-agent_${v1}_amd64.deb" || rc=$?
expect "dpkg -i $v1 exits 0" "$rc" 0
expect "dpkg: installed" "$(dpkg-query -W -f '${Status} ${Version}' yuzu-agent)" "install ok installed $v1"
expect "the service is active" "$(systemctl is-active $unit)" active
expect "the service is enabled" "$(systemctl is-enabled $unit)" enabled
# (/lib is /usr/lib on Debian 12, and systemd names it by the first.)
expect "the unit is the packaged one" "$(realpath "$(prop FragmentPath)")" /usr/lib/systemd/system/yuzu-agent.service
expect "the unit has Delegate=yes" "$(prop Delegate)" yes
expect "current -> $v1" "$(readlink /opt/yuzu/agent/current)" "$v1"
out=$(timeout 120 yuzu-agent plugins 2>&1)
check "the agent installed the shipped plugins in its catalog" bash -c "grep -q '^filesystem ' <<<\"\$1\" && grep -q '^firewall ' <<<\"\$1\" && grep -q '^tags ' <<<\"\$1\"" - "$out"
expect "dpkg -V: nothing modified" "$(dpkg -V yuzu-agent 2>&1)" ""
check "yuzu-agent on PATH is $v1" bash -c "yuzu-agent --version | grep -q '^yuzu-agent $v1 '"
out=$(status_out)
check "the service's agent answers status, as $v1" grep -q "^agent: *$v1 " <<<"$out"
check "exec tags count (a separate agent, as an operator runs it)" timeout 120 yuzu-agent exec tags count
pid=$(prop MainPID)
echo "agent pid $pid, cgroup $(cgroup_of "$pid")"

echo "== the operator points the agent at a fleet server"
# Not through check, whose subshell would keep the server's port and pipe to itself.
if ts_start /root/fleet ./yuzu-testserver; then pass "the test fleet server starts"; else fail "the test fleet server starts"; fi
pki=/root/fleet/pki
cat >/etc/yuzu/agent.yaml <<EOF
# edited by the deb leg: kept across upgrades
server: 127.0.0.1:$ts_port
ca-cert: $pki/ca.pem
client-cert: $pki/client.pem
client-key: $pki/client-key.pem
plugin-dir: /opt/yuzu/plugins
data-dir: /var/lib/yuzu
EOF
check "systemctl restart" timeout 120 systemctl restart $unit
id=$(cat /var/lib/yuzu/agent_id 2>/dev/null)
check "the service's agent registers with the fleet server" ts_registered 120 "$id" "$v1"
check "it answers a fleet command (tags set)" ts_send 120 tags set key=env value=prod
pid=$(prop MainPID)
tags_pid=$(plugin_pid tags)
status_out
cg=$(prop ControlGroup)
expect "the agent sits in its delegated cgroup's leaf" "$(cgroup_of "$pid")" "$cg/yuzu-agent"
check "the tags plugin (pid $tags_pid) sits in a box under the service's cgroup ($(cgroup_of "$tags_pid"))" \
	grep -qE "^$cg/plugins-[0-9]+(/[^/]+)?\$" <<<"$(cgroup_of "$tags_pid")"
box=/sys/fs/cgroup$(cgroup_of "$tags_pid")
check "its box has the default limits (memory.max $(cat "$box/memory.max" 2>/dev/null), pids.max $(cat "$box/pids.max" 2>/dev/null))" \
	test "$(cat "$box/memory.max" 2>/dev/null)" = 536870912 -a "$(cat "$box/pids.max" 2>/dev/null)" = 256
out=$(timeout 120 yuzu-agent exec tags get key=env 2>&1)
check "exec tags get sees what the fleet command set" grep -qx "tag|env|prod" <<<"$out"

echo "== dpkg -i yuzu-agent $v2 (upgrade)"
rc=0
dpkg_i "yuzu-agent_${v2}_amd64.deb" || rc=$?
expect "dpkg -i $v2 exits 0" "$rc" 0
expect "dpkg: upgraded" "$(dpkg-query -W -f '${Status} ${Version}' yuzu-agent)" "install ok installed $v2"
expect "current -> $v2" "$(readlink /opt/yuzu/agent/current)" "$v2"
expect "previous -> $v1" "$(readlink /opt/yuzu/agent/previous)" "$v1"
expect "the service is active" "$(systemctl is-active $unit)" active
expect "the service is still enabled" "$(systemctl is-enabled $unit)" enabled
pid2=$(prop MainPID)
check "the service was restarted: a new agent process ($pid before, $pid2 now)" test "$pid2" != "$pid" -a "$pid2" != 0
out=$(status_out)
check "status reports agent $v2" grep -q "^agent: *$v2 " <<<"$out"
check "the edited configuration is kept" grep -q "kept across upgrades" /etc/yuzu/agent.yaml
check "the new default is beside it" cmp -s /usr/share/yuzu/agent.yaml.default /yuzu-test/agent.yaml.default
expect "the agent id is kept" "$(cat /var/lib/yuzu/agent_id 2>/dev/null)" "$id"
check "the upgraded agent registers as $v2, same id" ts_registered 120 "$id" "$v2"
out=$(ts_send 120 tags get key=env)
printf '%s\n' "$out"
check "the tags are kept: tags get answers env=prod" grep -q "tag|env|prod" <<<"$out"
expect "dpkg -V: nothing modified but the edited configuration" "$(dpkg -V yuzu-agent 2>&1 | grep -v ' c /etc/yuzu/agent.yaml$')" ""

echo "== the postinst run from inside the service's cgroup (dpkg-reconfigure)"
# As the agent itself would run the package manager: a restart from in there would end
# the script with the service. The postinst hands the restart to systemd instead.
pid=$(prop MainPID)
rc=0
(
	echo "$BASHPID" >"/sys/fs/cgroup$(prop ControlGroup)/yuzu-agent/cgroup.procs"
	exec timeout 300 dpkg-reconfigure yuzu-agent
) </dev/null >dpkg.out 2>&1 || rc=$?
sed 's/^/    | /' dpkg.out
expect "dpkg-reconfigure from inside the service's cgroup exits 0" "$rc" 0
check "the postinst says it handed the restart to systemd" grep -q "its restart is handed to systemd" dpkg.out
for ((i = 0; i < 60; i++)); do
	pid2=$(prop MainPID)
	[[ $pid2 != "$pid" && $pid2 != 0 && $(systemctl is-active $unit) == active ]] && break
	sleep 1
done
check "systemd restarted the service: a new agent process ($pid before, $pid2 now)" test "$pid2" != "$pid" -a "$pid2" != 0
check "which registers again" ts_registered 120 "$id" "$v2" 2

echo "== the agent updates itself from the fleet server to $v4"
# A release key the agent trusts for agent releases only (the shipped plugins stay
# unsigned), and a short splay so that the check after registering comes at once.
mkdir -p /etc/yuzu/publishers
cp /yuzu-test/release.pub /etc/yuzu/publishers/release.pub
chmod 0644 /etc/yuzu/publishers/release.pub
echo "update-splay: 5s" >>/etc/yuzu/agent.yaml
echo "publish-agent /yuzu-test/agent-$v4.bundle" >&"$ts_fd"
journal_mark=$(date '+%Y-%m-%d %H:%M:%S')
check "systemctl restart" timeout 200 systemctl restart $unit
check "the agent updates itself and registers as $v4, same id" ts_registered 240 "$id" "$v4"
expect "current -> $v4" "$(readlink /opt/yuzu/agent/current)" "$v4"
expect "previous -> $v2" "$(readlink /opt/yuzu/agent/previous)" "$v2"
check "the guard (the package's $v2 binary) let $v4 start on trial" bash -c "journalctl -u $unit --since '$journal_mark' --no-pager -o cat | grep -q '$v4 starts on trial'"
check "$v4 passed its trial (it registered)" bash -c "journalctl -u $unit --since '$journal_mark' --no-pager -o cat | grep -q 'this version passed its trial'"
out=$(dpkg -V yuzu-agent | grep -v ' c /etc/yuzu/agent.yaml$' || true)
check "dpkg -V: the package's files are as installed (the agent changed only its own tree)" test -z "$out"
expect "the service is active" "$(systemctl is-active $unit)" active
out=$(status_out)
check "status reports agent $v4" grep -q "^agent: *$v4 " <<<"$out"

echo "== an update to $v5, whose agent exits at start, is rolled back by the guard"
echo "publish-agent /yuzu-test/agent-$v5.bundle" >&"$ts_fd"
journal_mark=$(date '+%Y-%m-%d %H:%M:%S')
check "systemctl restart" timeout 200 systemctl restart $unit
waited=0
for ((i = 0; i < 120; i++)); do
	if journalctl -u $unit --since "$journal_mark" --no-pager -o cat | grep -q "rolled back from $v5 to $v4"; then
		waited=1
		break
	fi
	sleep 2
done
check "the guard rolled $v5 back to $v4" test "$waited" = 1
expect "current -> $v4 again" "$(readlink /opt/yuzu/agent/current)" "$v4"
check "$v4 registers again" ts_registered 240 "$id" "$v4" 3
out=$(status_out)
check "status shows the rollback" grep -q "^rollback: *$v5 -> $v4 at " <<<"$out"

# The release key is the operator's file, which no package removes: it goes by hand.
rm -rf /etc/yuzu/publishers

echo "== dpkg -i yuzu-agent $v2 again: the package's version runs again"
# The operator's package manager has the last word over the agent's own updates.
dpkg_i "yuzu-agent_${v2}_amd64.deb" || true
expect "current -> $v2" "$(readlink /opt/yuzu/agent/current)" "$v2"
out=$(status_out)
check "status reports agent $v2" grep -q "^agent: *$v2 " <<<"$out"

echo "== dpkg -i yuzu-agent $v3, whose agent exits at start"
rc=0
dpkg_i "yuzu-agent_${v3}_amd64.deb" || rc=$?
check "dpkg -i $v3 fails (exit $rc)" test "$rc" != 0
check "the postinst says why" grep -q "FAILED: yuzu-agent.service does not run agent $v3" dpkg.out
expect "dpkg leaves it half-configured" "$(dpkg-query -W -f '${Status}' yuzu-agent)" "install ok half-configured"
expect "current -> $v2 again (rolled back)" "$(readlink /opt/yuzu/agent/current)" "$v2"
expect "the service is active" "$(systemctl is-active $unit)" active
out=$(status_out)
check "the previous agent $v2 runs again" grep -q "^agent: *$v2 " <<<"$out"
check "and registers again" ts_registered 120 "$id" "$v2" 3

echo "== dpkg -r yuzu-agent"
pid=$(prop MainPID)
rc=0
timeout 300 dpkg -r yuzu-agent </dev/null >dpkg.out 2>&1 || rc=$?
sed 's/^/    | /' dpkg.out
expect "dpkg -r exits 0" "$rc" 0
expect "the service is stopped" "$(systemctl is-active $unit)" inactive
check "no agent process is left (pid $pid)" test ! -e "/proc/$pid"
check "the unit is gone" bash -c "! systemctl cat $unit >/dev/null 2>&1"
check "/usr/bin/yuzu-agent is gone" test ! -e /usr/bin/yuzu-agent -a ! -L /usr/bin/yuzu-agent
check "the data dir is kept" test -s /var/lib/yuzu/agent_id
check "the configuration is kept (a conffile)" grep -q "kept across upgrades" /etc/yuzu/agent.yaml

echo "== dpkg -P yuzu-agent"
rc=0
timeout 300 dpkg -P yuzu-agent </dev/null >dpkg.out 2>&1 || rc=$?
sed 's/^/    | /' dpkg.out
expect "dpkg -P exits 0" "$rc" 0
check "the data dir is gone" test ! -e /var/lib/yuzu
check "/opt/yuzu is gone" test ! -e /opt/yuzu
check "/etc/yuzu is gone" test ! -e /etc/yuzu
check "dpkg knows no yuzu-agent" bash -c "! dpkg-query -W yuzu-agent >/dev/null 2>&1 || dpkg-query -W -f '\${Status}' yuzu-agent | grep -q not-installed"
if ((checks_failed > 0)); then
	echo "== the agent's journal"
	journalctl -u $unit --no-pager -n 60 -o short-monotonic
fi
