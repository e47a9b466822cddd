#!/usr/bin/env bash
# Times the filesystem plugin's line searcher against grep on the same generated
# 100 MiB log file and prints the ratios (plugin time / grep time, lower is better).
# Then times the search action end to end, through a real plugin child (the agent's
# side of the protocol, up to 10000 match rows streamed back), on a generated log at
# the action's 100 MiB cap, and reports the child's peak RSS.
#
# Targets: literal search no slower than `grep -n -F`; a regex containing a required
# literal no slower than 1.5 times `grep -n -E`; end to end, both within 1.5 times
# grep (a command's round trip costs a few milliseconds), and the child's peak RSS
# under 64 MB. The regex without any literal is shown for information only. grep runs
# with LC_ALL=C (its fastest mode), -m 10000 to stop where the search action stops, and
# writes to a file (grep stops at the first match when its output is /dev/null). Each
# side keeps its best of RUNS runs on a warm page cache. Exits 1 when a target is
# missed.
#
# Usage: bench/search_vs_grep.sh      (env: GO=go binary, RUNS=5)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
go=${GO:-go}
runs=${RUNS:-5}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/search_vs_grep.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
file="$tmp/bench.log"

# Keep these in step with internal/pattern/search_bench_test.go.
lit='ERROR disk'
re_lit='disk sd[a-z][0-9]+ failed'
re_nolit='[A-Z]{5}[[:space:]][a-z]{4}[[:space:]][a-z]{2}[a-z][0-9]'

(cd "$here" && GOWORK=off "$go" test -c -o "$tmp/pattern.test" ./internal/pattern)

echo "generating and searching $file ..." >&2
SEARCH_BENCH_FILE="$file" "$tmp/pattern.test" -test.run='^$' \
	-test.bench='^BenchmarkSearch(Literal|RegexLiteral|RegexNoLiteral)$' \
	-test.benchtime=5x -test.count="$runs" >"$tmp/go.txt"
size=$(wc -c <"$file")

# go_seconds NAME: best ns/op of the benchmark, in seconds, from $results.
results="$tmp/go.txt"
go_seconds() {
	awk -v name="BenchmarkSearch$1" '
		$1 ~ "^" name "(-[0-9]+)?$" { for (i = 2; i <= NF; i++) if ($(i+1) == "ns/op") {
			if (best == "" || $i + 0 < best) best = $i + 0 } }
		END { if (best == "") exit 1; printf "%.6f\n", best / 1e9 }' "$results"
}

# grep_seconds ARGS...: best wall time of grep over RUNS runs.
grep_seconds() {
	local best="" t0 t1 rc
	for _ in $(seq "$runs"); do
		t0=$EPOCHREALTIME
		rc=0
		LC_ALL=C grep -n -m 10000 "$@" "$file" >"$tmp/grep.out" || rc=$?
		t1=$EPOCHREALTIME
		[ "$rc" -le 1 ] || { echo "grep failed ($rc): $*" >&2; exit 2; }
		best=$(awk -v a="$best" -v s="$t0" -v e="$t1" 'BEGIN {
			d = e - s; if (a == "" || d < a) printf "%.6f\n", d; else print a }')
	done
	echo "$best"
}

# go_matches NAME: the matches the benchmark reported.
go_matches() {
	awk -v name="BenchmarkSearch$1" '
		$1 ~ "^" name "(-[0-9]+)?$" { for (i = 2; i <= NF; i++) if ($(i+1) == "matches") m = $i + 0 }
		END { print m + 0 }' "$results"
}

status=0
printf '%-24s %10s %10s %8s %8s %s\n' case "grep MB/s" "ours MB/s" ratio target result
row() { # row NAME GO_BENCH TARGET GREP_ARGS...
	local name=$1 bench=$2 target=$3
	shift 3
	local g o
	g=$(grep_seconds "$@")
	o=$(go_seconds "$bench")
	if [ "$(wc -l <"$tmp/grep.out")" -ne "$(go_matches "$bench")" ]; then
		echo "$name: grep found $(wc -l <"$tmp/grep.out") lines, the searcher $(go_matches "$bench")" >&2
		status=1
	fi
	awk -v n="$name" -v g="$g" -v o="$o" -v t="$target" -v sz="$size" 'BEGIN {
		r = o / g
		res = (t == "-") ? "info" : (r <= t ? "ok" : "MISSED")
		printf "%-24s %10.0f %10.0f %8.2f %8s %s\n", n, sz / g / 1e6, sz / o / 1e6, r, t, res
		exit (res == "MISSED") }' || status=1
}
row "literal (-F)" Literal 1.0 -F -e "$lit"
row "regex with literal (-E)" RegexLiteral 1.5 -E -e "$re_lit"
row "regex, no literal (-E)" RegexNoLiteral - -E -e "$re_nolit"
echo "file: $size bytes" >&2

# End to end through a plugin child (BenchmarkSearchChild in change_child_test.go, same
# patterns). Its file stays within the action's 100 MiB cap, so it is a second file.
file="$tmp/child.log"
results="$tmp/child.txt"
(cd "$here" && "$go" test -c -o "$tmp/filesystem.test" .)
echo "generating $file and searching it through the plugin ..." >&2
# From the module's directory: the benchmark builds the plugin from the package there.
(cd "$here" && SEARCH_CHILD_BENCH_FILE="$file" "$tmp/filesystem.test" -test.run='^$' \
	-test.bench='^BenchmarkSearchChild$' -test.benchtime=5x -test.count="$runs") >"$results" ||
	{ cat "$results" >&2; echo "the child benchmark failed" >&2; exit 1; }
size=$(wc -c <"$file")
row "child: literal (-F)" Child/literal 1.5 -F -e "$lit"
row "child: regex+lit (-E)" Child/regex_with_literal 1.5 -E -e "$re_lit"
row "child: no literal (-E)" Child/regex_without_literal - -E -e "$re_nolit"
rss=$(awk '$1 ~ /^BenchmarkSearchChild\// { for (i = 2; i <= NF; i++) if ($(i+1) == "peak-RSS-MB" && $i + 0 > m) m = $i + 0 }
	END { printf "%.1f\n", m }' "$results")
echo "child peak RSS: $rss MB (target < 64)"
awk -v r="$rss" 'BEGIN { exit !(r < 64) }' || status=1
echo "file: $size bytes" >&2
exit "$status"
