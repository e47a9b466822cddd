#!/usr/bin/env bash
# Installs the tools pinned in tools/versions.txt into .tools/bin (`make tools`).
#
# Each tool is built with `GOBIN=.tools/bin go install PACKAGE@VERSION`, so it uses the
# tool's own go.mod and the checksum database: the same version gives the same tool on
# every machine. A tool already present at the pinned version is kept. What was
# installed is recorded in .tools/bin/.versions (the stamp); the binary's embedded
# build information (`go version -m`) is checked too, so a stale or hand-copied binary
# of another version is replaced even when the stamp claims otherwise.
#
# It also builds testreport (tools/testreport), which `make test` uses to summarise
# `go test -json` output.
#
# Usage: tools/install.sh [NAME...]   with names, only those pinned tools (and
# testreport): scripts/package.sh needs nfpm alone.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$ROOT/.tools/bin
STAMP=$BIN/.versions

if ! command -v go >/dev/null 2>&1; then
	if [[ -x /usr/local/go/bin/go ]]; then
		export PATH=/usr/local/go/bin:$PATH
	else
		echo "tools: go is not on PATH and not at /usr/local/go/bin/go" >&2
		exit 1
	fi
fi

mkdir -p "$BIN"
touch "$STAMP"

# installed_version BINARY prints the module version embedded in BINARY, or nothing.
# wait_up_to SECONDS PID: true once PID has ended (its status is left for wait),
# false if it still runs after SECONDS.
wait_up_to() {
	local i
	for ((i = 0; i < $1; i++)); do
		kill -0 "$2" 2>/dev/null || return 0
		sleep 1
	done
	! kill -0 "$2" 2>/dev/null
}

installed_version() {
	[[ -x $1 ]] || return 0
	go version -m "$1" 2>/dev/null | awk '$1 == "mod" { print $3; exit }'
}

# record NAME LINE replaces NAME's line in the stamp.
record() {
	local tmp
	tmp=$(mktemp "$STAMP.XXXXXX")
	grep -v "^$1 " "$STAMP" >"$tmp" || true
	echo "$2" >>"$tmp"
	sort -o "$tmp" "$tmp"
	chmod 0644 "$tmp"
	mv -f "$tmp" "$STAMP"
}

failed=0
only=" $* "
while read -r name pkg version rest; do
	[[ -z ${name:-} || $name == \#* ]] && continue
	if [[ $# -gt 0 && $only != *" $name "* ]]; then
		continue
	fi
	if [[ -z ${version:-} || -n ${rest:-} ]]; then
		echo "tools: malformed line in tools/versions.txt: $name $pkg $version $rest" >&2
		failed=1
		continue
	fi
	want="$name $pkg@$version"
	have=$(installed_version "$BIN/$name")
	if [[ $have == "$version" ]]; then
		if grep -qxF "$want" "$STAMP"; then
			echo "tools: $name $version already installed"
		else
			echo "tools: $name $version already installed (recorded in the stamp)"
			record "$name" "$want"
		fi
		continue
	fi
	if [[ -n $have ]]; then
		echo "tools: $name is $have, pinned $version: reinstalling"
	else
		echo "tools: installing $name $version"
	fi
	# GOWORK=off: the tool resolves its own dependencies, untouched by our go.work.
	# A cold build of one tool can take minutes on a loaded machine: a line every 30 s
	# says it is still going.
	started=$SECONDS
	(cd "$ROOT" && GOWORK=off GOBIN=$BIN go install "$pkg@$version") &
	build=$!
	while ! wait_up_to 30 "$build"; do
		echo "tools: still building $name ($((SECONDS - started))s)"
	done
	if ! wait "$build"; then
		echo "tools: FAILED to install $pkg@$version (is the Go module proxy reachable?)" >&2
		failed=1
		continue
	fi
	echo "tools: built $name in $((SECONDS - started))s"
	have=$(installed_version "$BIN/$name")
	if [[ $have != "$version" ]]; then
		echo "tools: $BIN/$name reports version '$have' after installing $version" >&2
		failed=1
		continue
	fi
	record "$name" "$want"
done <"$ROOT/tools/versions.txt"

# testreport is ours and tiny: rebuilding it is a cache hit when nothing changed.
if ! (cd "$ROOT/tools" && GOWORK=off go build -o "$BIN/testreport" ./testreport); then
	echo "tools: FAILED to build tools/testreport" >&2
	failed=1
fi

exit "$failed"
