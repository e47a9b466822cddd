#!/usr/bin/env bash
# Benchmark of find_by_hash's walk on a warm tree of about 20,000 files and
# 2 GB of incompressible data. It measures, in one run:
#   (a) the machine's SHA-256 limit on all cores (openssl speed, 16 KiB blocks),
#   (b) find DIR -type f -print0 | xargs -0 sha256sum, wall time,
#   (c) our walk (internal/hashwalk/cmd/findbyhash), wall time and peak RSS,
# then prints throughputs and the two ratios the walk must meet:
# ours / limit >= 75 % and find|xargs / ours >= 6x. Exits 1 when either is
# missed.
#
# Environment:
#   FIND_BY_HASH_BENCH_DIR  where the tree lives (default: a fixed directory
#                           under ${TMPDIR:-/tmp}); a complete tree is reused.
#   FIND_BY_HASH_FILES      number of files (default 20000)
#   FIND_BY_HASH_BYTES      approximate total bytes (default 2000000000)
#   FIND_BY_HASH_RUNS       walk repetitions, best one counts (default 3)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module="$(dirname "$here")"
tree="${FIND_BY_HASH_BENCH_DIR:-${TMPDIR:-/tmp}/yuzu-find-by-hash-bench}"
files="${FIND_BY_HASH_FILES:-20000}"
bytes="${FIND_BY_HASH_BYTES:-2000000000}"
runs="${FIND_BY_HASH_RUNS:-3}"
cores="$(nproc)"

export PATH="/usr/local/go/bin:$PATH"
command -v go >/dev/null || { echo "go not found" >&2; exit 1; }
if ! command -v openssl >/dev/null; then
	echo "installing openssl for the SHA-256 reference figure" >&2
	apt-get update -qq && apt-get install -y -qq openssl >/dev/null
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/find-by-hash-bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT

(cd "$module" && GOWORK=off CGO_ENABLED=0 go build -o "$work/findbyhash" ./internal/hashwalk/cmd/findbyhash &&
	GOWORK=off CGO_ENABLED=0 go build -o "$work/benchtree" ./internal/hashwalk/cmd/benchtree)

"$work/benchtree" -dir "$tree" -files "$files" -bytes "$bytes"
needle_sum="$(sha256sum "$tree/d000/needle" | cut -d' ' -f1)"

# Warm the page cache so every contender reads from memory.
find "$tree" -type f -print0 | xargs -0 cat >/dev/null
total_bytes="$(find "$tree" -type f ! -name .complete -printf '%s\n' | awk '{s+=$1} END {printf "%d", s}')"
total_files="$(find "$tree" -type f ! -name .complete | wc -l)"

now() { date +%s.%N; }

# (a) SHA-256 limit: one openssl process per core, 16 KiB blocks, in bytes
# per second. It is measured before and after our walk and the higher figure
# counts, so a busy machine cannot flatter the ratio.
sha_limit() {
	local out k
	out="$(openssl speed -multi "$cores" -seconds 3 -bytes 16384 -evp sha256 2>/dev/null ||
		openssl speed -multi "$cores" -seconds 3 sha256 2>/dev/null)"
	k="$(printf '%s\n' "$out" | awk 'tolower($1)=="sha256" {v=$NF} END {sub(/k$/, "", v); print v}')"
	if [ -z "$k" ]; then
		echo "could not parse openssl speed output:" >&2
		printf '%s\n' "$out" >&2
		exit 1
	fi
	awk -v k="$k" 'BEGIN {printf "%.0f", k * 1000}'
}
limit_before="$(sha_limit)"

# (b) find | xargs sha256sum.
t0="$(now)"
find "$tree" -type f ! -name .complete -print0 | xargs -0 sha256sum >/dev/null
t1="$(now)"
find_s="$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", b - a}')"

# (c) our walk, best of $runs.
best_s=""
best_rss=""
for i in $(seq "$runs"); do
	"$work/findbyhash" -root "$tree" -sha256 "$needle_sum" >"$work/rows" 2>"$work/stats"
	grep -q '^matches_found|1$' "$work/rows" || { echo "walk did not find the needle:" >&2; cat "$work/rows" "$work/stats" >&2; exit 1; }
	if grep -q '^truncated|' "$work/rows"; then
		echo "walk stopped early or skipped entries:" >&2
		cat "$work/rows" >&2
		exit 1
	fi
	s="$(sed -n 's/.*elapsed_seconds=\([0-9.]*\).*/\1/p' "$work/stats")"
	rss="$(sed -n 's/.*maxrss_kib=\([0-9]*\).*/\1/p' "$work/stats")"
	echo "walk run $i: ${s}s, peak RSS ${rss} KiB" >&2
	if [ -z "$best_s" ] || awk -v a="$s" -v b="$best_s" 'BEGIN {exit !(a < b)}'; then
		best_s="$s"
	fi
	if [ -z "$best_rss" ] || [ "$rss" -gt "$best_rss" ]; then
		best_rss="$rss"
	fi
done

limit_after="$(sha_limit)"
limit_bps="$(awk -v a="$limit_before" -v b="$limit_after" 'BEGIN {print (a > b ? a : b)}')"
echo "openssl sha256 limit: before ${limit_before} B/s, after ${limit_after} B/s; load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

awk -v bytes="$total_bytes" -v files="$total_files" -v limit="$limit_bps" -v cores="$cores" \
	-v find_s="$find_s" -v ours_s="$best_s" -v rss="$best_rss" '
BEGIN {
	mb = 1e6
	ours = bytes / ours_s
	findt = bytes / find_s
	r_limit = ours / limit * 100
	r_find = find_s / ours_s
	printf "tree: %d files, %.0f MB (warm)\n", files, bytes / mb
	printf "sha256 limit (openssl, %d cores, 16 KiB blocks): %.0f MB/s\n", cores, limit / mb
	printf "find | xargs sha256sum: %.3f s, %.0f MB/s\n", find_s, findt / mb
	printf "find_by_hash walk (best of runs): %.3f s, %.0f MB/s, peak RSS %.1f MiB\n", ours_s, ours / mb, rss / 1024
	printf "ours / limit: %.1f %% (target >= 75 %%)\n", r_limit
	printf "speed-up over find|xargs: %.1fx (target >= 6x)\n", r_find
	ok = (r_limit >= 75 && r_find >= 6)
	print (ok ? "RESULT: PASS" : "RESULT: FAIL")
	exit !ok
}'
