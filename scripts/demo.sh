#!/usr/bin/env bash
# `make demo`: drives the tags, filesystem and firewall plugins through the real agent binary, exactly as an
# operator would, in a fresh temporary data directory. Each step prints the command and
# its output and checks the exit code and the rows it must print; the demo stops with a
# non-zero status at the first step that behaves unexpectedly. Then the fleet link:
# `yuzu-agent run` against the in-process test fleet server. Needs `make build`.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

agent=$ROOT/bin/yuzu-agent
plugins=$ROOT/bin/plugins
for f in "$agent" "$plugins/yuzu-plugin-tags" "$plugins/plugins.sha256"; do
	if [[ ! -e $f ]]; then
		warn "demo: ${f#"$ROOT"/} is missing: run \`make build\` (make demo does)"
		exit 1
	fi
done

data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
say "demo: data dir $data (removed afterwards), plugin dir ${plugins#"$ROOT"/}"

steps=0
# run RC EXPECTED... -- ARGS...: runs `yuzu-agent ARGS`, shows it, and checks that it
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
	printf '\n$ yuzu-agent %s\n' "$(printf '%q ' "$@")"
	out=$("$agent" --plugin-dir "$plugins" --data-dir "$data" "$@" 2>&1) || rc=$?
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
run 0 "replacements_made|1" -- exec device.filesystem.replace path="$scratch/app.conf" search=8080 replacement=9090 base_dir="$scratch"
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
