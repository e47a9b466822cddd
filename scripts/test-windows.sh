#!/usr/bin/env bash
# `make test-windows` (also a step of `make test`): the Windows code, run for real as
# GOOS=windows/amd64 binaries under Wine 8.0 (docs/windows.md).
#
#   set-up     Wine, the private prefix, the bcryptprimitives shim, drive N: as a
#              network drive (scripts/wine-setup.sh)
#   unit       every workspace module's packages built as Windows test binaries and run
#              under Wine (scripts/wine-unit.sh)
#   end to end integration/wine: a Linux test that builds the Windows yuzu-agent.exe,
#              every yuzu-plugin-*.exe and the test plugins, and drives them under Wine
#
# One wine server is kept for the whole run and its services are started with their
# output on /dev/null first: services started by a test binary would inherit the pipe
# go test reads and hold it open (a hang). Every step is bounded and named when it
# fails. The output ends with the usual go test lines and one
# `windows: N passed, N failed` line.
#
# Usage: scripts/test-windows.sh [SUMMARY_FILE]   (make test passes its summary file:
# one line per part, with counts, is appended to it)
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=wine.sh
source "$ROOT/scripts/wine.sh"

outer=${1:-}
summary=$(mktemp)
started=$SECONDS
server=0
stop_server() {
	if ((server)); then
		timeout 30 env "${wine_env[@]}" "$WINESERVER" -k >/dev/null 2>&1 || true
		server=0
	fi
}
trap 'stop_server; rm -f "$summary"' EXIT

# record LINE writes one part's summary line here and to make test's summary.
record() {
	echo "$1" >>"$summary"
	if [[ -n $outer ]]; then echo "$1" >>"$outer"; fi
}

failed=0
if [[ ! -x $TOOLS_BIN/testreport ]]; then
	bounded "build testreport" 300 tools/install.sh >/dev/null || true
fi
if ! bounded "set-up" 900 scripts/wine-setup.sh; then
	record "FAIL windows set-up: Wine could not be set up (above); no Windows test ran"
	failed=1
else
	# A server an interrupted run left for this prefix (it is the leg's own) goes
	# first: `wineserver -p` refuses to start beside it.
	timeout 30 env "${wine_env[@]}" "$WINESERVER" -k >/dev/null 2>&1 || true
	server=1
	if ! bounded "start the wine server" 60 env "${wine_env[@]}" "$WINESERVER" -p </dev/null >/dev/null 2>&1; then
		record "FAIL windows set-up: the wine server did not start"
		failed=1
	elif ! bounded "start the Wine services" 120 env "${wine_env[@]}" "$WINE64" wineboot </dev/null >/dev/null 2>&1; then
		record "FAIL windows set-up: the Wine services did not start"
		failed=1
	fi
fi

# part NAME LIMIT CMD... runs one go test -json stream through testreport.
part() {
	local name=$1 limit=$2 one rc=0 start=$SECONDS
	shift 2
	one=$(mktemp)
	printf '\n==== windows %s\n' "$name"
	set +e
	timeout --kill-after=10 "$limit" "$@" 2>&1 | "$TOOLS_BIN/testreport" -label "windows $name" -summary "$one"
	local st=("${PIPESTATUS[@]}")
	set -e
	if ((st[0] == 124 || st[0] == 137)); then
		warn "windows: step '$name' did not finish within ${limit}s: stopped"
		record "FAIL windows $name: did not finish within ${limit}s ($((SECONDS - start))s)"
		rc=1
	elif [[ -s $one ]]; then
		record "$(cat "$one") ($((SECONDS - start))s)"
		if ((st[1] != 0)); then
			rc=1
		elif ((st[0] != 0)); then
			warn "windows: go test exited ${st[0]} in $name although no test failed"
			record "FAIL windows $name: go test exited ${st[0]}"
			rc=1
		fi
	else
		record "FAIL windows $name: testreport wrote no summary"
		rc=1
	fi
	rm -f "$one"
	return "$rc"
}

if ((!failed)); then
	mapfile -t mods < <(modules | grep -vx integration)
	patterns=()
	for m in "${mods[@]}"; do patterns+=("./$m/..."); done
	part unit 900 scripts/wine-unit.sh "${patterns[@]}" || failed=1
	# Two end-to-end tests at a time, whatever the cores: with four, Wine 8.0 now and
	# then lost a process (a plugin start failing with "Internal error", an agent that
	# did not exit after its answer), and it was no faster on two cores.
	part "end to end" 600 env "YUZU_WINE_DIR=$WINE_DIR" YUZU_WINE_SERVER=running \
		go test -json -count=1 -parallel 2 -timeout 8m ./integration/wine/ || failed=1
	stop_server
fi

counts=$(awk '{ for (i = 2; i <= NF; i++) { if ($i ~ /^passed,?$/) p += $(i-1); if ($i ~ /^failed,?$/) f += $(i-1); if ($i ~ /^skipped,?$/) k += $(i-1) } }
	END { printf "%d passed, %d failed, %d skipped", p, f, k }' "$summary")
printf '\n==== windows summary (%ds)\n' $((SECONDS - started))
cat "$summary"
read -r p _ f _ k _ <<<"$counts"
note="$k skipped, each named above"
if ((failed)) && ((f == 0)); then note+="; a step failed, see above"; fi
printf 'windows: %d passed, %d failed (%s)\n' "$p" "$f" "$note"
exit "$failed"
