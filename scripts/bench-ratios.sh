#!/usr/bin/env bash
# The ratios of issue 34 that need a second build or a raw go-plugin twin, each measured
# side by side in one run and printed beside its goal (a missed goal is reported, never
# fatal: the build machines are shared):
#
#   fleet commands  BenchmarkFleetCommands (1,000 `tags count` at once through the test
#                   fleet server and `yuzu-agent run`) on the agent of BENCH_BASE and on
#                   ours, in turn, ROUNDS times with the same test harness: the median
#                   of ours over the median of the base, goal >= 4x. Beside it, the
#                   floor from ours' own metrics in the same rounds: a plugin's
#                   max(4, cores) slots each hold a command while its start record
#                   reaches the disk and while the plugin runs it, which bounds the
#                   rate at slots/(wait + run).
#   idle start      BenchmarkIdleFirstCommand: the first command after an idle stop
#                   against a raw go-plugin start of the same child, goal <= 2x.
#   cold exec       BenchmarkColdExecVsRaw: a whole `yuzu-agent exec tags count` process
#                   against cmd/rawhost, a whole process doing the same over bare
#                   go-plugin, alternating, goal <= 1.15x.
#   spool           BenchmarkFleetRows: rows/s to the server with the answer spool and
#                   its ratio to no spool (reported, no goal).
#   RSS after rows  BenchmarkRSSAfterRows: the agent's resident memory idle, just after
#                   relaying one answer of 50,000 rows, at the end of a 120 s window
#                   (YUZU_BENCH_RSS_WINDOW, a Go duration, shortens it) and its peak
#                   (reported, no goal).
#
# BENCH_BASE is a git ref (default 0d02962, the commit before issue 34's changes); its
# agent is built from `git archive`, the checkout is not touched. ROUNDS defaults to 3.
# The exit status is non-zero only when a benchmark is broken.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

base_ref=${BENCH_BASE:-0d02962}
rounds=${ROUNDS:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

say "bench-ratios: base $base_ref ($(git rev-parse --short "$base_ref")), ours $(git rev-parse --short HEAD)$(git diff --quiet || echo ' with local changes')"
mkdir "$work/base-src"
git archive "$base_ref" | tar -x -C "$work/base-src"
# The harness is ours for both sides: only the binaries differ.
(cd integration && CGO_ENABLED=0 go test -c -o "$work/integration.test" .)
(cd integration && YUZU_INTEGRATION_BUILD_ONLY=1 YUZU_INTEGRATION_BIN="$work/ours" "$work/integration.test" >/dev/null)
CGO_ENABLED=0 go build -trimpath -o "$work/ours/rawhost" ./integration/cmd/rawhost
cp -r "$work/ours" "$work/base"
(cd "$work/base-src/agent" && CGO_ENABLED=0 go build -o "$work/base/yuzu-agent" ./cmd/yuzu-agent)

# metric SIDE BENCH 'UNIT...' [BENCHTIME]: one run of BENCH on SIDE's binaries, printing
# the value of each UNIT (space-separated, on one line; a unit the run did not report
# prints nothing).
metric() {
	local out
	out=$(cd integration && YUZU_INTEGRATION_BIN="$work/$1" "$work/integration.test" -test.run '^$' -test.bench "^$2\$" -test.benchtime "${4:-3x}" 2>&1) || {
		warn "$out"
		warn "bench-ratios: $2 on $1 failed"
		return 1
	}
	awk -v units="$3" '$1 ~ /^Benchmark/ {
		n = split(units, u, " "); line = ""
		for (k = 1; k <= n; k++) for (i = 2; i < NF; i++) if ($(i + 1) == u[k]) line = line (line == "" ? "" : " ") $i
		print line
	}' <<<"$out"
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
verdict() { awk -v v="$1" -v g="$2" -v op="$3" 'BEGIN { ok = (op == ">=") ? v >= g : v <= g; print (ok ? "meets goal" : "MISSES goal") }'; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

: >"$work/fleet"
: >"$work/floor"
for ((i = 1; i <= rounds; i++)); do
	for side in base ours; do
		read -r v wait run bound < <(metric "$side" BenchmarkFleetCommands 'commands/s start-wait-ms in-plugin-ms slot-bound-commands/s')
		[[ -n $v ]] || { warn "bench-ratios: no commands/s from $side"; exit 1; }
		echo "$side $v" >>"$work/fleet"
		[[ $side == ours && -n $bound ]] && echo "$v $wait $run $bound" >>"$work/floor"
		say "fleet commands round $i $side: $v commands/s${bound:+ (slot-bound $bound: start wait $wait ms + in plugin $run ms)} (load $(load))"
	done
done
b=$(awk '$1 == "base" { print $2 }' "$work/fleet" | median)
o=$(awk '$1 == "ours" { print $2 }' "$work/fleet" | median)
r=$(awk -v o="$o" -v b="$b" 'BEGIN { printf "%.2f", o / b }')
say "RESULT fleet commands: ours $o commands/s, base $b: ${r}x (goal >= 4x: $(verdict "$r" 4 '>='))"
# The floor, from ours' own metrics in the same rounds: each of a plugin's max(4, cores)
# slots holds a command while its start record reaches the disk and while the plugin
# runs it, so the slots pass at most slots/(wait + run) commands a second.
if [[ -s $work/floor ]]; then
	fb=$(awk '{ print $4 }' "$work/floor" | median)
	fw=$(awk '{ print $2 }' "$work/floor" | median)
	fr=$(awk '{ print $3 }' "$work/floor" | median)
	say "RESULT fleet commands floor: $(nproc)-core slots bound ours at $fb commands/s (start wait $fw ms + in plugin $fr ms a command; medians), $(awk -v f="$fb" -v b="$b" 'BEGIN { printf "%.2f", f / b }')x the base; ours reached $(awk -v o="$o" -v f="$fb" 'BEGIN { printf "%.0f", 100 * o / f }')% of it"
fi

# against_raw BENCH UNIT: ROUNDS runs of BENCH (20 iterations each) on ours, printing
# the median of UNIT, then each round's value.
against_raw() {
	local f=$work/$1
	: >"$f"
	for ((i = 1; i <= rounds; i++)); do
		metric ours "$1" "$2" 20x >>"$f"
	done
	echo "$(median <"$f") $(tr '\n' ' ' <"$f")"
}

read -r r each < <(against_raw BenchmarkIdleFirstCommand idle/raw)
say "RESULT first command after an idle stop: ${r}x a raw go-plugin start (goal <= 2x: $(verdict "$r" 2 '<=')); rounds: $each"

read -r r each < <(against_raw BenchmarkColdExecVsRaw exec/raw)
say "RESULT cold exec tags count: ${r}x a raw go-plugin process doing the same (goal <= 1.15x: $(verdict "$r" 1.15 '<=')); rounds: $each"

out=$(cd integration && YUZU_INTEGRATION_BIN="$work/ours" "$work/integration.test" -test.run '^$' -test.bench '^BenchmarkFleetRows$' -test.benchtime 2x 2>&1) || {
	warn "$out"
	warn "bench-ratios: BenchmarkFleetRows failed"
	exit 1
}
unit() { awk -v u="$1" '$1 ~ /^Benchmark/ { for (i = 2; i < NF; i++) if ($(i + 1) == u) print $i }' <<<"$out"; }
rows=$(unit rows/s)
ratio=$(unit spool/no-spool)
say "RESULT rows to the server with the spool: $rows rows/s, $ratio of no spool (no goal; load $(load))"

out=$(cd integration && YUZU_INTEGRATION_BIN="$work/ours" "$work/integration.test" -test.run '^$' -test.bench '^BenchmarkRSSAfterRows$' -test.benchtime 1x 2>&1) || {
	warn "$out"
	warn "bench-ratios: BenchmarkRSSAfterRows failed"
	exit 1
}
idle=$(unit idle-RSS-MiB)
after=$(unit after-RSS-MiB)
end=$(unit end-RSS-MiB)
peak=$(unit peak-RSS-MiB)
window=$(unit window-s | awk '{ printf "%g", $1 }')
[[ -n $idle && -n $after && -n $end && -n $peak && -n $window ]] || {
	warn "$out"
	warn "bench-ratios: no RSS figures from BenchmarkRSSAfterRows"
	exit 1
}
say "RESULT agent RSS after relaying 50,000 rows: idle $idle MiB, just after $after MiB, after $window s $end MiB (peak $peak MiB; no goal; load $(load))"
