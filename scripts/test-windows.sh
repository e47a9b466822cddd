#!/usr/bin/env bash
# `make test-windows` (also a step of `make test`): the Windows code, run for real as
# GOOS=windows/amd64 binaries under Wine 8.0 (docs/windows.md).
#
#   build      every workspace module's packages as Windows test binaries
#              (scripts/wine-unit.sh build), and the end-to-end test integration/wine
#              (a Linux test) with the Windows yuzu-agent.exe, every yuzu-plugin-*.exe
#              and the test plugins it drives; no Wine needed, so this runs while...
#   set-up     ...Wine, the private prefix, the bcryptprimitives shim and drive N: as a
#              network drive are made ready (scripts/wine-setup.sh), and the wine
#              server and its services start;
#   unit       the test binaries run under Wine (scripts/wine-unit.sh run), while
#   end to end integration/wine drives the Windows binaries under Wine.
#
# The two test parts run at the same time: both mostly wait on Wine's server, and each
# keeps two Wine test processes at a time. Their reports are printed one after the
# other. One wine server is kept for the whole run and its services are started with
# their output on /dev/null first: services started by a test binary would inherit the
# pipe go test reads and hold it open (a hang). Every step is bounded and named when it
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

# record LINE writes one part's summary line here and to make test's summary.
record() {
	echo "$1" >>"$summary"
	if [[ -n $outer ]]; then echo "$1" >>"$outer"; fi
}

failed=0
if [[ ! -x $TOOLS_BIN/testreport ]]; then
	bounded "build testreport" 300 tools/install.sh >/dev/null || true
fi
work=$(mktemp -d)
trap 'stop_server; rm -rf "$summary" "$work"' EXIT
mapfile -t mods < <(modules | grep -vx integration)
patterns=()
for m in "${mods[@]}"; do patterns+=("./$m/..."); done
e2e=$WINE_DIR/e2e/wine.test

# The builds, in the background while Wine is set up. The end-to-end test binary
# builds the Windows binaries it drives when asked to do only that (its TestMain).
build_start=$SECONDS
bounded "build the Windows test binaries" 900 scripts/wine-unit.sh build "${patterns[@]}" >"$work/unit-build.log" 2>&1 &
unit_build=$!
(
	mkdir -p "$WINE_DIR/e2e"
	bounded "build the end-to-end test" 600 go test -c -vet=off -o "$e2e" ./integration/wine/ &&
		(cd integration/wine && bounded "build the Windows binaries" 600 env "YUZU_WINE_DIR=$WINE_DIR" YUZU_WINE_BUILD_ONLY=1 "$e2e")
) >"$work/e2e-build.log" 2>&1 &
e2e_build=$!

setup_start=$SECONDS
if ! bounded "set-up" 900 scripts/wine-setup.sh; then
	record "FAIL windows set-up: Wine could not be set up (above); no Windows test ran"
	failed=1
else
	# A server an interrupted run left for this prefix (it is the leg's own) goes
	# first: `wineserver -p` refuses to start beside it.
	timeout 30 env "${wine_env[@]}" "$WINESERVER" -k >/dev/null 2>&1 || true
	# What earlier runs left in the prefix's Temp (go-plugin's plugin-dir*, private
	# copies of an interrupted run) goes before any test runs: Windows code under Wine
	# cannot remove a directory tree there, and nothing of this run is in it yet.
	find "$WINE_DIR/prefix/drive_c/users" -mindepth 2 -maxdepth 2 -name Temp -type d \
		-exec find {} -mindepth 1 -maxdepth 1 -exec rm -rf {} + \; 2>/dev/null || true
	server=1
	if ! bounded "start the wine server" 60 env "${wine_env[@]}" "$WINESERVER" -p </dev/null >/dev/null 2>&1; then
		record "FAIL windows set-up: the wine server did not start"
		failed=1
	elif ! bounded "start the Wine services" 120 env "${wine_env[@]}" "$WINE64" wineboot </dev/null >/dev/null 2>&1; then
		record "FAIL windows set-up: the Wine services did not start"
		failed=1
	fi
fi
say "windows: Wine ready in $((SECONDS - setup_start))s"
unit_built=0 e2e_built=0
wait "$unit_build" && unit_built=1
wait "$e2e_build" && e2e_built=1
cat "$work/unit-build.log" >&2
cat "$work/e2e-build.log"
say "windows: builds done in $((SECONDS - build_start))s"

# part NAME LIMIT CMD... runs one go test -json stream through testreport; its report
# goes to $work/NAME.out, its summary line to $work/NAME.summary.
part() {
	local name=$1 limit=$2 one=$work/$1.summary rc=0 start=$SECONDS
	shift 2
	set +e
	timeout --kill-after=10 "$limit" "$@" 2>&1 | "$TOOLS_BIN/testreport" -label "windows $name" -summary "$one.tr"
	local st=("${PIPESTATUS[@]}")
	set -e
	if ((st[0] == 124 || st[0] == 137)); then
		warn "windows: step '$name' did not finish within ${limit}s: stopped"
		echo "FAIL windows $name: did not finish within ${limit}s ($((SECONDS - start))s)" >"$one"
		rc=1
	elif [[ -s $one.tr ]]; then
		echo "$(cat "$one.tr") ($((SECONDS - start))s)" >"$one"
		if ((st[1] != 0)); then
			rc=1
		elif ((st[0] != 0)); then
			warn "windows: go test exited ${st[0]} in $name although no test failed"
			echo "FAIL windows $name: go test exited ${st[0]}" >>"$one"
			rc=1
		fi
	else
		echo "FAIL windows $name: testreport wrote no summary" >"$one"
		rc=1
	fi
	return "$rc"
}

if ((!failed)); then
	if ((!unit_built)); then warn "windows: the unit test binaries did not build (above)"; fi
	part unit 900 scripts/wine-unit.sh run >"$work/unit.out" 2>&1 &
	unit=$!
	# The end-to-end test binary, run as go test -json would, in its package's
	# directory, against the running wine server, one test at a time whatever the
	# cores: with four, Wine 8.0 now and then lost a process (a plugin start failing
	# with "Internal error", an agent that did not exit after its answer), and with two
	# still in about one run of four (fork/exec of a plugin: "Internal error.").
	if ((e2e_built)); then
		part "end to end" 600 env -C integration/wine "YUZU_WINE_DIR=$WINE_DIR" YUZU_WINE_SERVER=running \
			"$WINE_DIR/bin/test2json" -t -p github.com/yuzugo/yuzu/integration/wine \
			"$e2e" -test.v=test2json -test.count=1 -test.parallel=1 -test.timeout=8m \
			</dev/null >"$work/end to end.out" 2>&1 &
	else
		(
			echo "windows: the end-to-end test or the Windows binaries it drives did not build (above)"
			echo "FAIL windows end to end: did not build" >"$work/end to end.summary"
			exit 1
		) >"$work/end to end.out" &
	fi
	end=$!
	wait "$unit" || failed=1
	wait "$end" || failed=1
	stop_server
	for name in unit "end to end"; do
		printf '\n==== windows %s\n' "$name"
		cat "$work/$name.out"
		while read -r line; do record "$line"; done <"$work/$name.summary"
	done
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
