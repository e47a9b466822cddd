# shellcheck shell=bash
# Shared helpers for the scripts in this directory; source it, do not run it.
#
# Everything here works from the repository root whatever the caller's directory, and
# treats a workspace module that has no Go packages yet (a bare go.mod) as "nothing to
# do here yet" with a message, never as an error and never silently.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck disable=SC2034 # used by the scripts that source this file
TOOLS_BIN=$ROOT/.tools/bin
cd "$ROOT"

# A fresh Debian machine has Go at /usr/local/go without it being on PATH.
if ! command -v go >/dev/null 2>&1; then
	if [[ -x /usr/local/go/bin/go ]]; then
		export PATH=/usr/local/go/bin:$PATH
	else
		echo "go is not on PATH and not at /usr/local/go/bin/go: install Go 1.26 first" >&2
		exit 1
	fi
fi

# cgo off unless a step needs it (go test -race does, and says so): building, vetting,
# staticcheck and the ordinary tests then share one build configuration with
# `make cross` for linux/amd64, so the dependency graph is compiled once for it, not
# once with cgo and once without. Nothing here uses cgo.
export CGO_ENABLED=${CGO_ENABLED:-0}

# The platforms `make cross` checks; only linux/amd64 runs tests here.
CROSS_PLATFORMS=${CROSS_PLATFORMS:-"linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"}

# modules prints the workspace modules (directories relative to the root), one a line.
modules() {
	local dir
	GOWORK='' go list -m -f '{{.Dir}}' | while read -r dir; do
		echo "${dir#"$ROOT"/}"
	done
}

# packages MODULE prints the module's packages for the current GOOS/GOARCH; nothing for
# a module that is still a bare go.mod.
packages() {
	(cd "$ROOT/$1" && go list -e ./... 2>/dev/null) || true
}

# has_go_files DIR tells whether DIR (recursively) holds any Go source yet.
has_go_files() {
	[[ -n $(find "$ROOT/$1" -name '*.go' -not -path '*/testdata/*' -print -quit 2>/dev/null) ]]
}

# shipped_plugins prints NAME DIR for each plugin that `make build` installs into
# bin/plugins: every workspace module named plugin-NAME. Example plugins
# (sdk/examples/...) and test plugins (integration/...) are never shipped.
shipped_plugins() {
	local m
	modules | while read -r m; do
		case $m in
		plugin-*) echo "${m#plugin-} $m" ;;
		esac
	done
}

# is_main DIR tells whether DIR holds a main package for the current GOOS/GOARCH.
is_main() {
	[[ $(cd "$ROOT/$1" && go list -e -f '{{.Name}}' . 2>/dev/null) == main ]]
}

# Colourless, greppable status words.
say() { printf '%s\n' "$*"; }
warn() { printf '%s\n' "$*" >&2; }

# bounded NAME SECONDS CMD... runs CMD, stopping it (and everything in its process
# group) after SECONDS; a step that hangs or fails is named, with the leg ($LEG) that
# ran it.
bounded() {
	local name=$1 limit=$2 rc=0
	shift 2
	timeout --kill-after=10 "$limit" "$@" || rc=$?
	if ((rc == 124 || rc == 137)); then
		warn "${LEG:-make}: step '$name' did not finish within ${limit}s: stopped"
	elif ((rc != 0)); then
		warn "${LEG:-make}: step '$name' failed (exit $rc)"
	fi
	return "$rc"
}
