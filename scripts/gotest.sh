#!/usr/bin/env bash
# Runs one module's tests through tools/testreport.
#
# Usage: scripts/gotest.sh MODULE SUMMARY_FILE [go test flags...]
# PKGS (optional): the module's packages to test, relative to it; default ./...
#
# The report lists every failing test with its output and every skipped test with its
# reason, and appends one line with exact counts to SUMMARY_FILE. A module that is
# still a bare go.mod has nothing to test; that is said, in the report and the summary.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mod=$1 summary=$2
shift 2

if [[ -z $(packages "$mod") ]]; then
	say "test $mod: no packages yet: nothing to test"
	echo "NONE $mod: no packages yet, nothing to test" >>"$summary"
	exit 0
fi
if [[ ! -x $TOOLS_BIN/testreport ]]; then
	warn "test $mod: $TOOLS_BIN/testreport is missing: run \`make tools\`"
	echo "FAIL $mod: testreport missing (run make tools)" >>"$summary"
	exit 1
fi

label="go test $*"
label="$mod: ${label% }${NOTE:+ ($NOTE)}"
say "test $mod: go test $* ${PKGS:-./...}"
one=$(mktemp)
trap 'rm -f "$one"' EXIT
start=$SECONDS
# go test's own status matters too: it fails on things the event stream may not show
# (a bad flag, a module that does not load).
set +e
read -ra pkgs <<<"${PKGS:-./...}"
(cd "$mod" && go test -json "$@" "${pkgs[@]}" 2>&1) | "$TOOLS_BIN/testreport" -label "$label" -summary "$one"
status=("${PIPESTATUS[@]}")
set -e
if [[ -s $one ]]; then
	echo "$(cat "$one") ($((SECONDS - start))s)" >>"$summary"
else
	echo "FAIL $label: testreport wrote no summary" >>"$summary"
	status[1]=1
fi
if ((status[0] != 0 && status[1] == 0)); then
	warn "test $mod: go test exited ${status[0]} although no test failed"
	echo "FAIL $mod: go test exited ${status[0]}" >>"$summary"
	exit 1
fi
exit "${status[1]}"
