# shellcheck shell=bash
# Helpers of the package legs (scripts/test-packages.sh), sourced on this machine and,
# for the deb leg, inside its virtual machine (scripts/packages-vm.sh), which has bash
# but none of lib.sh's Go set-up: the checks each leg counts, and a console to the test
# fleet server (yuzu-testserver, docs/fleet.md) fed through a FIFO.

# LEG names the leg in every line, which goes to standard output.
checks_passed=0
checks_failed=0

# pass NAME / fail NAME [WHY]: one check's outcome, as a line `ok   LEG: NAME` or
# `FAIL LEG: NAME: WHY`.
pass() {
	checks_passed=$((checks_passed + 1))
	echo "ok   $LEG: $1"
}
fail() {
	checks_failed=$((checks_failed + 1))
	echo "FAIL $LEG: $1${2:+: $2}"
}

# check NAME CMD...: CMD's exit status is the check; its output is shown when it fails.
check() {
	local name=$1 out rc=0
	shift
	out=$("$@" 2>&1) || rc=$?
	if ((rc == 0)); then
		pass "$name"
	else
		fail "$name" "exit $rc"
		printf '%s\n' "$out" | tail -n 15 | sed 's/^/    /'
	fi
}

# expect NAME GOT WANT: a check that two strings are equal.
expect() {
	if [[ $2 == "$3" ]]; then
		pass "$1"
	else
		fail "$1" "got '$2', want '$3'"
	fi
}

# The fleet console. ts_start DIR BIN starts BIN (yuzu-testserver) with its
# certificates in DIR/pki on a free loopback port (ts_port); ts_send sends one command
# and waits for its answer; ts_stop ends the server.
ts_start() {
	ts_dir=$1
	mkdir -p "$ts_dir"
	rm -f "$ts_dir/in"
	mkfifo "$ts_dir/in"
	"$2" -dir "$ts_dir/pki" -listen 127.0.0.1:0 <"$ts_dir/in" >"$ts_dir/out" 2>&1 &
	ts_pid=$!
	# Opened read-write, so that opening never waits for the reader.
	exec {ts_fd}<>"$ts_dir/in"
	local i
	for ((i = 0; i < 100; i++)); do
		# Its greeting ends with "then type ...".
		if grep -q '^then type' "$ts_dir/out" 2>/dev/null; then
			ts_port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$ts_dir/out")
			# Command ids are PREFIX-N, the prefix new at every start (older servers: cmd).
			ts_prefix=$(sed -n 's/^command ids are \(.*\)-N,.*/\1/p' "$ts_dir/out")
			echo "${ts_prefix:-cmd}" >"$ts_dir/prefix"
			[[ -n $ts_port ]] && return 0
			break
		fi
		sleep 0.2
	done
	echo "the test fleet server did not start:" >&2
	cat "$ts_dir/out" >&2
	return 1
}

# ts_send SECONDS ACTION...: sends `send ACTION...`, waits up to SECONDS for the answer's
# last line (`cmd-N STATUS  exit_code=...`) and prints the command's lines; true when
# the status is SUCCESS.
ts_send() {
	local limit=$1 i last ts_n id
	shift
	# The count is kept in a file: checks run their command in a subshell.
	ts_n=$(($(cat "$ts_dir/sent" 2>/dev/null || echo 0) + 1))
	echo "$ts_n" >"$ts_dir/sent"
	id=$(cat "$ts_dir/prefix")-$ts_n
	echo "send $*" >&"$ts_fd"
	for ((i = 0; i < limit * 5; i++)); do
		last=$(grep -a "^   $id [A-Z_]*  exit_code=" "$ts_dir/out" | tail -n 1)
		[[ -n $last ]] && break
		sleep 0.2
	done
	grep -a "$id[: ]" "$ts_dir/out"
	[[ $last == *" SUCCESS  "* ]]
}

# ts_registered SECONDS AGENT-ID VERSION [N]: waits until the agent AGENT-ID has
# registered reporting agent VERSION N times (default once) since the server started.
ts_registered() {
	local limit=$1 id=$2 version=$3 want=${4:-1} i n
	for ((i = 0; i < limit * 5; i++)); do
		n=$(grep -ac "^fleet: registered agent $id .*, agent $version\$" "$ts_dir/out" || true)
		((n >= want)) && return 0
		sleep 0.2
	done
	echo "agent $id $version registered $n times, not $want; the server said:" >&2
	tail -n 20 "$ts_dir/out" >&2
	return 1
}

ts_stop() {
	if [[ -n ${ts_pid:-} ]]; then
		{ echo quit >&"$ts_fd"; } 2>/dev/null || true
		exec {ts_fd}>&-
		sleep 0.5
		kill "$ts_pid" 2>/dev/null || true
		wait "$ts_pid" 2>/dev/null || true
		ts_pid=""
	fi
}
