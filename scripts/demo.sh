#!/usr/bin/env bash
# `make demo`: drives the tags, filesystem and firewall plugins through the real agent binary, exactly as an
# operator would, in a fresh temporary data directory. Each step prints the command and
# its output and checks the exit code and the rows it must print; the demo stops with a
# non-zero status at the first step that behaves unexpectedly. Then the fleet link:
# `yuzu-agent run` against the in-process test fleet server, and by hand: an agent
# connected to yuzu-testserver, which sends it a command. Needs `make build`.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

agent=$ROOT/bin/yuzu-agent
plugins=$ROOT/bin/plugins
testserver=$ROOT/bin/yuzu-testserver
for f in "$agent" "$testserver" "$plugins/yuzu-plugin-tags" "$plugins/catalog.json"; do
	if [[ ! -e $f ]]; then
		warn "demo: ${f#"$ROOT"/} is missing: run \`make build\` (make demo does)"
		exit 1
	fi
done

data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
say "demo: data dir $data (removed afterwards), plugin dir ${plugins#"$ROOT"/}"

steps=0
# run RC EXPECTED... -- ARGS...: runs `yuzu-agent ARGS` (stdin: the file run_stdin
# names, else /dev/null), shows it, and checks that it
# exits RC and prints every EXPECTED line (each must match a whole output line; one
# starting with ~ need only appear somewhere in the output).
run() {
	local want_rc=$1 expected=() out rc=0
	shift
	while [[ $1 != -- ]]; do
		expected+=("$1")
		shift
	done
	shift
	steps=$((steps + 1))
	printf '\n$ yuzu-agent %s%s\n' "$(printf '%q ' "$@")" "${run_stdin:+<$run_stdin}"
	out=$("$agent" --plugin-dir "$plugins" --data-dir "$data" "$@" 2>&1 <"${run_stdin:-/dev/null}") || rc=$?
	printf '%s\n' "$out"
	if ((rc != want_rc)); then
		warn "demo: FAILED: exit code $rc, expected $want_rc"
		exit 1
	fi
	for e in "${expected[@]}"; do
		if [[ $e == "~"* ]]; then
			if [[ $out != *"${e#"~"}"* ]]; then
				warn "demo: FAILED: the output does not mention '${e#"~"}'"
				exit 1
			fi
		elif ! grep -qxF -- "$e" <<<"$out"; then
			warn "demo: FAILED: the output has no line '$e'"
			exit 1
		fi
	done
}

run 0 "tag_set|env|prod" -- exec tags set key=env value=prod
run 0 "tag_set|role|web" -- exec tags set key=role value=web
run 0 "tag|env|prod" -- exec tags get key=env
run 0 "tag|missing|" -- exec tags get key=missing
run 0 "tag|env|prod" "tag|role|web" "count|2" -- exec tags get_all
run 0 "tag_exists|env|true" -- exec tags check key=env
run 0 "count|2" -- exec tags count
run 0 "tag_deleted|env|true" -- exec tags delete key=env
run 0 "tag_exists|env|false" -- exec tags check key=env

printf '\n$ cat %s/tags.json\n' "$data"
cat "$data/tags.json"
printf '\n'
if ! grep -q '"role": "web"' "$data/tags.json" || grep -q '"env"' "$data/tags.json"; then
	warn "demo: FAILED: tags.json should hold role=web and no env"
	exit 1
fi

run 0 "tags_cleared|1" -- exec tags clear
run 0 "count|0" -- exec tags count
run 0 "~tags" -- plugins
run 0 "~name: tags" -- describe tags
# The error case: the contract's key pattern is checked at set time (rc 1, error row).
run 1 "error|invalid key: bad key" "[rc] 1" -- exec tags set "key=bad key"
run 1 -- exec no-such-plugin count

# A short tour of the filesystem plugin on a scratch directory (docs/filesystem.md).
scratch=$(mktemp -d)
trap 'rm -rf "$data" "$scratch"' EXIT
printf 'alpha\nbeta\ngamma\ndelta\n' >"$scratch/notes.txt"
printf 'listen 8080\n' >"$scratch/app.conf"
mkdir "$scratch/logs"
notes_sha=$(sha256sum "$scratch/notes.txt" | cut -d' ' -f1)
printf '\n== the filesystem plugin on a scratch directory %s ==\n' "$scratch"
run 0 "exists|true" "type|file" "size|23" -- exec filesystem exists path="$scratch/notes.txt"
run 0 "entry|logs|directory|0" -- exec filesystem list_dir path="$scratch"
run 0 "line|2|beta" "total_lines|4" -- exec filesystem read path="$scratch/notes.txt" offset=2 limit=2
run 0 "hash|$notes_sha" "algorithm|sha256" -- exec filesystem file_hash path="$scratch/notes.txt"
run 0 "match|3|gamma" "total_matches|1" -- exec filesystem search path="$scratch/notes.txt" pattern=gam
# By plugin and action (the device.filesystem.* definitions, which ask for agent 0.4.0,
# run it too).
run 0 "replacements_made|1" -- exec filesystem replace path="$scratch/app.conf" search=8080 replacement=9090 base_dir="$scratch"
run 0 "line|1|listen 9090" -- exec filesystem read path="$scratch/app.conf"
run 0 "status|ok" "bytes_written|5" -- exec filesystem write_content path="$scratch/new.txt" content=hello create=true
run 0 "lines_deleted|2" "total_lines_after|2" -- exec filesystem delete_lines path="$scratch/notes.txt" start_line=2 end_line=3
run 0 "match|$scratch/notes.txt|12" "matches_found|1" -- exec filesystem find_by_hash directory="$scratch" sha256="$(sha256sum "$scratch/notes.txt" | cut -d' ' -f1)"
run 0 "result|$scratch/logs|directory" "total_matches|1" -- exec filesystem search_dir root="$scratch" pattern='lo*'
# Refusals: outside base_dir, and a symbolic link swapped in for the target.
run 1 "error|path is not accessible or outside allowed base directory" -- exec filesystem read path=/etc/hostname base_dir="$scratch"
ln -s /etc/hostname "$scratch/sneaky"
run 1 "error|path is not accessible or outside allowed base directory" -- exec filesystem read path="$scratch/sneaky" base_dir="$scratch"

# The firewall plugin: always rc 0; what it sees depends on the machine.
printf '\n== the firewall plugin ==\n'
run 0 "~backend|" -- exec firewall state

# The shell fed a script on stdin (a pipe works the same): one agent, one supervisor,
# a line per command, each answered as exec answers it (docs/agent.md "The shell").
printf '\n== yuzu-agent shell, fed a script on stdin ==\n'
script=$scratch/shell-script
printf '%s\n' "tags set key=demo value=shell" "device.tags.get key=demo" "tags delete key=demo" >"$script"
printf '\n$ cat %s\n' "$script"
cat "$script"
run_stdin=$script run 0 "tag_set|demo|shell" "tag|demo|shell" "tag_deleted|demo|true" -- shell

# Machine-readable output (docs/agent.md "Output formats"): one JSON object, fields
# named from the action's declared row columns, read back by jq when it is here.
run 0 '~"kind":"count"' '~"status":"UNDECLARED"' -- exec tags count --output json
if command -v jq >/dev/null 2>&1; then
	printf '\n$ yuzu-agent exec tags count --output json | jq -c .rows\n'
	if ! json_rows=$("$agent" --plugin-dir "$plugins" --data-dir "$data" exec tags count --output json | jq -c .rows); then
		warn "demo: FAILED: jq could not read exec's --output json"
		exit 1
	fi
	printf '%s\n' "$json_rows"
else
	printf '\n(jq is not installed: `make test` installs it; the jq step is left out)\n'
fi

printf '\ndemo: all %d steps behaved as expected\n' "$steps"

# The fleet link: the test fleet server (integration/fleetserver) and `yuzu-agent run`
# over mutual TLS with a throw-away CA; instructions picked from the definitions the
# plugins serve; every answer printed as the server receives it (docs/fleet.md).
printf '\n== the fleet link: yuzu-agent run against a test fleet server ==\n'
fleet_bin=$(mktemp -d)
trap 'rm -rf "$data" "$scratch" "$fleet_bin"' EXIT
go build -o "$fleet_bin/fleetdemo" ./integration/cmd/fleetdemo
if ! "$fleet_bin/fleetdemo" -agent "$agent" -plugin-dir "$plugins"; then
	warn "demo: FAILED: the fleet link"
	exit 1
fi
printf '\ndemo: the fleet link behaved as expected\n'

# By hand: yuzu-testserver (integration/cmd/yuzu-testserver, docs/fleet.md) makes its
# certificates, prints the `yuzu-agent run` line that connects an agent, and sends the
# commands typed on its stdin (here: through a FIFO) to that agent.
printf '\n== by hand: yuzu-testserver and an agent started with the line it prints ==\n'
by_hand=$(mktemp -d)
agent_pid=
server_pid=
stop_by_hand() {
	[[ -n $agent_pid ]] && kill "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
	[[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
	rm -rf "$data" "$scratch" "$fleet_bin" "$by_hand"
}
trap stop_by_hand EXIT
# by_hand_fail MESSAGE: shows both logs and stops the demo.
by_hand_fail() {
	warn "demo: FAILED: $1"
	warn "--- yuzu-testserver output"
	cat "$by_hand/server.out" >&2
	warn "--- agent log"
	cat "$by_hand/agent.log" >&2 2>/dev/null || true
	exit 1
}
mkfifo "$by_hand/in"
# With a token the printed line gives the agent the authority and the token only: it
# enrolls (a CSR for a key of its own) and connects with the certificate issued.
"$testserver" -listen 127.0.0.1:0 -dir "$by_hand/pki" -plugin-dir "$plugins" -enrollment-token demo-token <"$by_hand/in" >"$by_hand/server.out" 2>&1 &
server_pid=$!
exec 3>"$by_hand/in" # held open: the server reads until the demo says quit
# wait_for TEXT: waits (up to two minutes) until the server has printed TEXT.
wait_for() {
	local i
	for ((i = 0; i < 1200; i++)); do
		grep -qF -- "$1" "$by_hand/server.out" && return 0
		kill -0 "$server_pid" 2>/dev/null || by_hand_fail "yuzu-testserver exited before printing '$1'"
		sleep 0.1
	done
	by_hand_fail "yuzu-testserver did not print '$1' within two minutes"
}
wait_for "  yuzu-agent run "
run_line=$(grep -m1 -- "^  yuzu-agent run " "$by_hand/server.out")
read -ra run_args <<<"$run_line"
printf '$ yuzu-testserver -listen 127.0.0.1:0 -dir %s -plugin-dir %s -enrollment-token demo-token\n' "$by_hand/pki" "${plugins#"$ROOT"/}"
sed -n '1,5p' "$by_hand/server.out"
printf '$ %s\n' "${run_line#  }"
"$agent" --plugin-dir "$plugins" --data-dir "$by_hand/data" "${run_args[@]:1}" >"$by_hand/agent.log" 2>&1 &
agent_pid=$!
# The running agent answers `yuzu-agent status` on its local socket.
wait_for "fleet: registered agent"
grep -q "enrolled: the fleet server issued a certificate" "$by_hand/agent.log" ||
	by_hand_fail "the agent did not enroll with the token"
printf '(the agent enrolled: %s)\n' "$(grep -o 'certificate="[^"]*"' "$by_hand/agent.log" | head -1)"
status_ok=0
for ((i = 0; i < 100; i++)); do
	if "$agent" --plugin-dir "$plugins" --data-dir "$by_hand/data" status >"$by_hand/status.out" 2>&1; then
		status_ok=1
		break
	fi
	sleep 0.2
done
printf '$ yuzu-agent status\n'
cat "$by_hand/status.out"
((status_ok)) || by_hand_fail "yuzu-agent status did not answer"
grep -q tags "$by_hand/status.out" || by_hand_fail "yuzu-agent status does not name the tags plugin"
printf 'send tags set key=team value=blue\nsend device.tags.get key=team\nagents\nquit\n' >&3
exec 3>&-
wait_for "-2 SUCCESS"
if ! wait "$server_pid"; then
	server_pid=
	by_hand_fail "yuzu-testserver did not exit 0 on quit"
fi
server_pid=
printf '(typed: send tags set key=team value=blue / send device.tags.get key=team / agents / quit)\n'
sed -n '6,$p' "$by_hand/server.out"
for want in "-1 RUNNING  tag_set|team|blue" "-2 RUNNING  tag|team|blue"; do
	grep -qF -- "$want" "$by_hand/server.out" || by_hand_fail "the server's output has no '$want'"
done
printf '\ndemo: yuzu-testserver and the agent behaved as expected\n'
