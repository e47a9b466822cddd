#!/usr/bin/env bash
# `make test-stress`: the fleet, supervisor and dispatch integration tests on a machine
# made busy on purpose, to find what only a loaded host shows (a command that goes
# silent, a test that guesses a timing). Not part of `make test`: it takes a while.
#
#   STRESS_RUNS   how many times each test runs (default 10)
#   STRESS_HOGS   busy loops beside the tests (default 5 per core)
#   STRESS_RUN    the tests, a go test -run pattern (default the fleet, supervisor and
#                 dispatch tests)
#
# The test binary and the binaries it tests are built before the busy loops start;
# the runs then share one build. The summary line counts every run of every test.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

runs=${STRESS_RUNS:-10}
hogs=${STRESS_HOGS:-$((5 * $(nproc)))}
pattern=${STRESS_RUN:-'^(TestFleet|TestSupervisor|TestDispatch)'}

if [[ ! -x $TOOLS_BIN/testreport ]]; then
	tools/install.sh
fi
work=$(mktemp -d)
pids=()
cleanup() {
	((${#pids[@]} == 0)) || kill "${pids[@]}" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

say "stress: building the integration tests"
(cd integration && go test -c -o "$work/integration.test" .)

say "stress: $hogs busy loops on $(nproc) cores; $runs runs of $pattern"
for ((i = 0; i < hogs; i++)); do
	sh -c 'while :; do :; done' &
	pids+=($!)
done
start=$SECONDS
set +e
(cd integration && go tool test2json -t -p integration \
	"$work/integration.test" -test.v=test2json -test.run "$pattern" -test.count "$runs" -test.timeout 60m 2>&1) |
	"$TOOLS_BIN/testreport" -label "integration under $hogs busy loops, $runs runs" -summary "$work/summary"
rc=${PIPESTATUS[1]}
set -e
printf '\n==== summary (%ds, load average %s)\n' $((SECONDS - start)) "$(cut -d' ' -f1-3 /proc/loadavg)"
cat "$work/summary"
exit "$rc"
