#!/usr/bin/env bash
# Times `bin/yuzu-agent exec tags count` as a whole process, cold each time: agent start,
# plugin discovery and checksum, plugin start and handshake, one action, shutdown. Runs
# RUNS times (default 30) and prints p50 and p90 in milliseconds against the 100 ms
# target. Uses hyperfine when it is installed (apt-get install hyperfine), else a loop
# timed with date +%s%N (HYPERFINE=none forces the loop). Needs `make build` first.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RUNS=${RUNS:-30}
TARGET_MS=100
agent=$ROOT/bin/yuzu-agent
if [[ ! -x $agent || ! -x $ROOT/bin/plugins/yuzu-plugin-tags ]]; then
	warn "bench-cold-exec: bin/yuzu-agent or bin/plugins/yuzu-plugin-tags is missing: run \`make build\`"
	exit 1
fi

data=$(mktemp -d)
times=$(mktemp)
trap 'rm -rf "$data" "$times" "$times.json"' EXIT
cmd=("$agent" --plugin-dir "$ROOT/bin/plugins" --data-dir "$data" exec tags count)

# One untimed run: it must work, and it warms the page cache like any later run would.
if ! out=$("${cmd[@]}" 2>&1); then
	warn "$out"
	warn "bench-cold-exec: \`${cmd[*]}\` failed"
	exit 1
fi

HYPERFINE=${HYPERFINE:-hyperfine}
if [[ $HYPERFINE != none ]] && command -v "$HYPERFINE" >/dev/null 2>&1; then
	tool=hyperfine
	"$HYPERFINE" --style basic --warmup 2 --runs "$RUNS" --export-json "$times.json" \
		"$(printf '%q ' "${cmd[@]}")" >&2
	# The JSON's "times" array holds each run in seconds; no jq needed.
	tr -d ' \n' <"$times.json" | sed -n 's/.*"times":\[\([^]]*\)\].*/\1/p' | tr ',' '\n' |
		awk 'NF { printf "%.3f\n", $1 * 1000 }' >"$times"
else
	tool="date +%s%N loop"
	for ((i = 0; i < RUNS; i++)); do
		start=$(date +%s%N)
		if ! "${cmd[@]}" >/dev/null 2>&1; then
			warn "bench-cold-exec: run $((i + 1)) failed"
			exit 1
		fi
		end=$(date +%s%N)
		awk -v ns=$((end - start)) 'BEGIN { printf "%.3f\n", ns / 1e6 }' >>"$times"
	done
fi

n=$(wc -l <"$times")
if ((n == 0)); then
	warn "bench-cold-exec: no timings recorded"
	exit 1
fi
sort -n -o "$times" "$times"
# Nearest-rank percentiles.
pct() { awk -v p="$1" -v n="$n" 'BEGIN { r = int((p * n + 99) / 100); if (r < 1) r = 1 } NR == r { print; exit }' "$times"; }
p50=$(pct 50)
p90=$(pct 90)
awk -v p50="$p50" -v p90="$p90" -v n="$n" -v t="$TARGET_MS" -v tool="$tool" 'BEGIN {
	printf "cold exec (tags count, %d runs, %s): p50 %.1f ms, p90 %.1f ms; p50 is %.2fx, p90 %.2fx the %d ms target (%s)\n",
		n, tool, p50, p90, p50 / t, p90 / t, t, (p50 <= t ? "p50 within the target" : "p50 OVER the target")
}'
