#!/usr/bin/env bash
# Times the filesystem plugin's pattern matching against grep on the same generated
# files and prints each ratio (our time / grep's time, lower is better) beside its
# goal. grep runs with LC_ALL=C (its fastest mode) and writes to a file (grep stops at
# the first match when its output is /dev/null).
#
# In process (internal/pattern's benchmarks, a generated 100 MiB log):
#   literal                  grep -n -m 10000 -F    goal <= 1
#   literal, ignoring case   grep -n -m 10000 -iF   goal <= 1, and <= 1.5 times our
#                                                   case-sensitive literal
#   regex with a literal     grep -n -m 10000 -E    goal <= 1.5
#   regex without literal    grep -n -m 10000 -E    goal <= 3 (the lazy DFA; Go's
#                                                   regexp alone is shown for reference)
#   replace, no literal      grep -n -E             goal <= 3 (every match found over
#                                                   the file in memory, as the regex
#                                                   replace finds them; the whole
#                                                   ReplaceAll, which also copies 100 MiB
#                                                   into the new content, for reference)
#   names (search_dir)       grep -c -x -E          goal <= 3 (two million names, each
#                                                   matched whole; ours excludes the read)
# End to end through a plugin child (BenchmarkSearchChild: the agent's side of the
# protocol, up to 10000 rows streamed back), on a log at the action's 100 MiB cap, each
# case against the same grep; goal <= 1.5, <= 3 without a literal; and the child's
# peak RSS, goal < 64 MB.
#
# Every run times our side and then grep's, so a change in the machine's load hits
# both; each figure is the median of the runs and each ratio the median of the runs'
# ratios. The in-process rows compare CPU time (user + system: our benchmark loop's,
# grep's whole process), which a busy machine disturbs far less than wall time; the
# wall-time ratio is printed beside it. The end-to-end rows compare wall time. A ratio
# over its goal is reported, never fatal (a loaded machine must not fail). The exit
# status is 1 only when a benchmark is broken: it failed, or found a different number
# of matches than grep.
#
# Usage: bench/search_vs_grep.sh      (env: GO=go binary, RUNS=5, CHILD_RUNS=min(RUNS,5))
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
go=${GO:-go}
runs=${RUNS:-5}
child_runs=${CHILD_RUNS:-$((runs < 5 ? runs : 5))}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/search_vs_grep.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export SEARCH_BENCH_FILE="$tmp/bench.log" SEARCH_NAMES_FILE="$tmp/names.txt"
export SEARCH_CHILD_BENCH_FILE="$tmp/child.log"

# Keep these in step with internal/pattern/search_bench_test.go and searchChildCases
# in change_child_test.go.
lit='ERROR disk'
lit_fold='error disk'
re_lit='disk sd[a-z][0-9]+ failed'
re_nolit='[A-Z]{5}[[:space:]][a-z]{4}[[:space:]][a-z]{2}[a-z][0-9]'
re_name='[a-z]+_[0-9]{2,4}[a-z]*\.[a-z]{3}'

status=0
broken() {
	echo "BROKEN: $*" >&2
	status=1
}

(cd "$here" && GOWORK=off "$go" test -c -o "$tmp/pattern.test" ./internal/pattern)
(cd "$here" && "$go" test -c -o "$tmp/filesystem.test" .)

# go_bench NAME: runs the searcher's benchmark NAME (Benchmark or Benchmark/sub) once
# and prints "name cpu_ns wall_ns matches" lines (name without the -N suffix).
go_bench() {
	local out pat="^$1\$"
	[[ $1 == */* ]] && pat="^${1%%/*}\$/^${1#*/}\$"
	if ! out=$("$tmp/pattern.test" -test.run='^$' -test.bench="$pat" -test.benchtime=1x 2>&1); then
		echo "$out" >&2
		return 1
	fi
	awk '$1 ~ /^Benchmark/ { name = $1; sub(/-[0-9]+$/, "", name); ns = ""; cpu = ""; m = ""
		for (i = 2; i <= NF; i++) {
			if ($(i+1) == "ns/op") ns = $i; if ($(i+1) == "cpu-ns/op") cpu = $i; if ($(i+1) == "matches") m = $i }
		if (cpu == "" || cpu == 0) cpu = ns
		print name, cpu, ns, m + 0 }' <<<"$out"
}

# grep_run OUT ARGS...: runs grep on ARGS, its output in OUT; prints its CPU and wall
# nanoseconds and its output lines.
grep_run() {
	local out=$1 rc=0 TIMEFORMAT='%3R %3U %3S'
	shift
	{ time LC_ALL=C grep "$@" >"$out" 2>"$tmp/grep.err"; } 2>"$tmp/time.txt" || rc=$?
	[ "$rc" -le 1 ] || { cat "$tmp/grep.err" >&2; echo "grep failed ($rc): $*" >&2; return 1; }
	awk -v n="$(wc -l <"$out")" '{ printf "%.0f %.0f %d\n", ($2 + $3) * 1e9, $1 * 1e9, n }' "$tmp/time.txt"
}

# The cases: name | our benchmark | goal | grep arguments (the file is appended).
cases=(
	"literal (-F)|BenchmarkSearchLiteral|1|-n -m 10000 -F -e $lit"
	"literal -i (-iF)|BenchmarkSearchLiteralFold|1|-n -m 10000 -i -F -e $lit_fold"
	"regex with literal|BenchmarkSearchRegexLiteral|1.5|-n -m 10000 -E -e $re_lit"
	"regex, no literal|BenchmarkSearchRegexNoLiteral|3|-n -m 10000 -E -e $re_nolit"
	"  Go regexp alone|BenchmarkSearchRegexNoLiteralGo|-|-n -m 10000 -E -e $re_nolit"
	"replace, no literal|BenchmarkReplaceRegexNoLiteral|3|-n -E -e $re_nolit"
	"  whole ReplaceAll|BenchmarkReplaceAllNoLiteral|-|-n -E -e $re_nolit"
	"names, no literal (-x)|BenchmarkMatchNames/dfa|3|-c -x -E -e $re_name"
)

echo "generating the benchmark files ..." >&2
{ go_bench BenchmarkSearchLiteral && go_bench BenchmarkMatchNames/dfa; } >/dev/null ||
	{ broken "the searcher's benchmarks do not run"; exit 1; }
log_size=$(wc -c <"$SEARCH_BENCH_FILE")

# One line per case and run: "case|ours_cpu|grep_cpu|ours_wall|grep_wall|ours_matches|grep_lines".
: >"$tmp/runs.txt"
for run in $(seq "$runs"); do
	for c in "${cases[@]}"; do
		IFS='|' read -r name bench _ args <<<"$c"
		# The regex benchmarks of the Go regexp alone take seconds: three runs say enough.
		if [[ $bench == *Go ]] && ((run > 3)); then
			continue
		fi
		ours=$(go_bench "$bench") || { broken "$bench failed"; continue; }
		ours=$(awk -v b="$bench" '$1 == b { print $2, $3, $4 }' <<<"$ours")
		file=$SEARCH_BENCH_FILE
		[[ $bench == *Names* ]] && file=$SEARCH_NAMES_FILE
		read -r -a argv <<<"${args% -e *}"
		theirs=$(grep_run "$tmp/grep.out" "${argv[@]}" -e "${args#* -e }" "$file") || { broken "grep for $name"; continue; }
		read -r ocpu owall om <<<"$ours"
		read -r gcpu gwall gl <<<"$theirs"
		[[ $bench == *Names* ]] && gl=$(cat "$tmp/grep.out")
		echo "$name|$ocpu|$gcpu|$owall|$gwall|$om|$gl" >>"$tmp/runs.txt"
	done
	echo "run $run of $runs done" >&2
done

# report NAME GOAL: the medians of NAME's runs and the median ratios, beside GOAL
# (judged on the first ratio).
report() {
	awk -F'|' -v name="$1" -v goal="$2" '
		function median(a, n,   i, j, t) {
			for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
			return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
		$1 == name { n++; o[n] = $2; g[n] = $3; r[n] = $2 / $3; w[n] = $4 / $5; if ($6 != $7) bad = $6 " vs " $7 }
		END {
			if (n == 0) exit 2
			mo = median(o, n); mg = median(g, n); mr = median(r, n); mw = median(w, n)
			res = goal == "-" ? "info" : (mr <= goal + 0 ? "ok" : "over")
			printf "%-24s %9.1f %9.1f %7.2f %7.2f %7s  %s\n", name, mo / 1e6, mg / 1e6, mr, mw, (goal == "-" ? "-" : "<= " goal), res
			if (bad != "") { printf "  matches differ from grep: %s\n", bad; exit 1 }
		}' "$tmp/runs.txt"
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); file: $log_size bytes; $runs runs; CPU ms"
printf '%-24s %9s %9s %7s %7s %7s  %s\n' case ours grep ratio "(wall)" goal result
for c in "${cases[@]}"; do
	IFS='|' read -r name _ goal _ <<<"$c"
	report "$name" "$goal" || broken "$name"
done
# The folded literal against our own case-sensitive one, run by run.
awk -F'|' '$1 == "literal (-F)" { s[++n] = $2 } $1 == "literal -i (-iF)" { f[++m] = $2 }
	END { k = n < m ? n : m
		for (i = 1; i <= k; i++) r[i] = f[i] / s[i]
		for (i = 2; i <= k; i++) for (j = i; j > 1 && r[j-1] > r[j]; j--) { t = r[j]; r[j] = r[j-1]; r[j-1] = t }
		mr = k % 2 ? r[(k+1)/2] : (r[k/2] + r[k/2+1]) / 2
		printf "%-24s %9s %9s %7.2f %7s %7s  %s\n", "literal -i / literal", "", "", mr, "", "<= 1.5", (mr <= 1.5 ? "ok" : "over") }' "$tmp/runs.txt"

# End to end through a plugin child. Its file stays within the action's 100 MiB cap.
child_cases=(
	"child: literal|literal|1.5|-n -m 10000 -F -e $lit"
	"child: literal -i|literal_case-insensitive|1.5|-n -m 10000 -i -F -e $lit_fold"
	"child: regex+literal|regex_with_literal|1.5|-n -m 10000 -E -e $re_lit"
	"child: no literal|regex_without_literal|3|-n -m 10000 -E -e $re_nolit"
)
echo "searching through the plugin, $child_runs runs ..." >&2
: >"$tmp/child_runs.txt"
rss=0
for run in $(seq "$child_runs"); do
	# From the module's directory: the benchmark builds the plugin from the package there.
	if ! (cd "$here" && "$tmp/filesystem.test" -test.run='^$' -test.bench='^BenchmarkSearchChild$' \
		-test.benchtime=1x) >"$tmp/child.txt" 2>&1; then
		cat "$tmp/child.txt" >&2
		broken "the child benchmark failed"
		break
	fi
	rss=$(awk -v r="$rss" '$1 ~ /^BenchmarkSearchChild\// { for (i = 2; i <= NF; i++) if ($(i+1) == "peak-RSS-MB" && $i + 0 > r) r = $i + 0 }
		END { print r }' "$tmp/child.txt")
	for c in "${child_cases[@]}"; do
		IFS='|' read -r name sub _ args <<<"$c"
		ours=$(awk -v b="BenchmarkSearchChild/$sub" '{ n = $1; sub(/-[0-9]+$/, "", n) }
			n == b { for (i = 2; i <= NF; i++) { if ($(i+1) == "ns/op") ns = $i; if ($(i+1) == "matches") m = $i }
				print ns, m + 0 }' "$tmp/child.txt")
		[ -n "$ours" ] || { broken "no result for $name"; continue; }
		read -r -a argv <<<"${args% -e *}"
		theirs=$(grep_run "$tmp/grep.out" "${argv[@]}" -e "${args#* -e }" "$SEARCH_CHILD_BENCH_FILE") ||
			{ broken "grep for $name"; continue; }
		read -r ons om <<<"$ours"
		read -r _ gwall gl <<<"$theirs"
		echo "$name|$ons|$gwall|$ons|$gwall|$om|$gl" >>"$tmp/child_runs.txt"
	done
done
cp "$tmp/child_runs.txt" "$tmp/runs.txt"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); file: $(wc -c <"$SEARCH_CHILD_BENCH_FILE") bytes; $child_runs runs; wall ms"
for c in "${child_cases[@]}"; do
	IFS='|' read -r name _ goal _ <<<"$c"
	report "$name" "$goal" || broken "$name"
done
awk -v r="$rss" 'BEGIN { printf "%-24s %9.1f MB %30s  %s\n", "child peak RSS", r, "< 64", (r < 64 ? "ok" : "over") }'
exit "$status"
