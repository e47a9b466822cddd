#!/usr/bin/env bash
# Times `bin/yuzu-agent exec tags count` as a whole process, cold each time: agent start,
# plugin discovery and checksum (or its verification record), plugin start and
# handshake, one action, shutdown. Runs RUNS times (default 30) and prints the medians
# of the wall time and of the CPU time (user + system of the agent and its plugin
# child) beside the goals of issue 17 (<= 25 ms wall on a quiet machine, <= 60 ms
# CPU), with the load average, since the figures mean little on a loaded machine. Then
# STEP_RUNS (default 10) more runs at --log-level debug give each launch step's median
# from the agent's "plugin launch steps" line (the check: hash and copy, or the copy a
# verification record allows; TLS key, child start and handshake, Describe,
# Configure); what is
# left of the wall time is the agent's own start, the command and the shutdown.
#
# It exits non-zero only when the benchmark itself is broken (no binaries, a failing
# run, no figures), never because a goal is missed. Needs `make build` first.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RUNS=${RUNS:-30}
STEP_RUNS=${STEP_RUNS:-10}
GOAL_WALL_MS=25
GOAL_CPU_MS=60
agent=$ROOT/bin/yuzu-agent
if [[ ! -x $agent || ! -x $ROOT/bin/plugins/yuzu-plugin-tags ]]; then
	warn "bench-cold-exec: bin/yuzu-agent or bin/plugins/yuzu-plugin-tags is missing: run \`make build\`"
	exit 1
fi

data=$(mktemp -d)
times=$(mktemp)
steps=$(mktemp)
trap 'rm -rf "$data" "$times" "$steps"' EXIT
cmd=("$agent" --plugin-dir "$ROOT/bin/plugins" --data-dir "$data" exec tags count)

# The agent records a verification only for a binary that last changed 2 s or more
# before it was hashed (docs/agent.md): one just built by `make build` is given that
# long, as any installed plugin has had, so that the untimed run below writes the
# record the timed runs use.
changed=$(stat -c %Z "$ROOT/bin/plugins/yuzu-plugin-tags")
age=$(($(date +%s) - changed))
if ((age < 3)); then
	sleep $((3 - age))
fi

# One untimed run: it must work, and it warms the page cache like any later run would.
if ! out=$("${cmd[@]}" 2>&1); then
	warn "$out"
	warn "bench-cold-exec: \`${cmd[*]}\` failed"
	exit 1
fi

# bash's time keyword: wall, and the user and system CPU of the waited-for children
# (the agent, which has waited for its plugin, so the plugin's CPU is in the agent's).
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
TIMEFORMAT='%3R %3U %3S'
for ((i = 0; i < RUNS; i++)); do
	if ! { time "${cmd[@]}" >/dev/null 2>&1; } 2>>"$times"; then
		warn "bench-cold-exec: run $((i + 1)) failed"
		exit 1
	fi
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

n=$(wc -l <"$times")
if ((n != RUNS)); then
	warn "bench-cold-exec: $n timings recorded for $RUNS runs"
	exit 1
fi
# median COLUMN-EXPRESSION: the median of an awk expression over the timing lines.
median() {
	awk "{ print $1 }" "$2" | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
wall=$(median '$1 * 1000' "$times")
cpu=$(median '($2 + $3) * 1000' "$times")
awk -v w="$wall" -v c="$cpu" -v n="$n" -v gw="$GOAL_WALL_MS" -v gc="$GOAL_CPU_MS" -v l0="$load_before" -v l1="$load_after" 'BEGIN {
	printf "cold exec (tags count, %d runs): wall median %.1f ms, goal <= %d ms (%.2fx, %s); CPU median %.1f ms, goal <= %d ms (%.2fx, %s); load %s -> %s\n",
		n, w, gw, w / gw, (w <= gw ? "met" : "missed"), c, gc, c / gc, (c <= gc ? "met" : "missed"), l0, l1
}'

# The launch steps, from the agent's own debug line.
for ((i = 0; i < STEP_RUNS; i++)); do
	start=$(date +%s%N)
	if ! log=$("$agent" --plugin-dir "$ROOT/bin/plugins" --data-dir "$data" --log-level debug exec tags count 2>&1 >/dev/null); then
		warn "bench-cold-exec: debug run $((i + 1)) failed"
		exit 1
	fi
	end=$(date +%s%N)
	line=$(grep -m1 'plugin launch steps' <<<"$log" || true)
	if [[ -z $line ]]; then
		warn "bench-cold-exec: no \"plugin launch steps\" line at --log-level debug"
		exit 1
	fi
	field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$line"; }
	echo "$(awk -v ns=$((end - start)) 'BEGIN { printf "%.3f", ns / 1e6 }') $(field hash_ms) $(field tls_ms) $(field start_ms) $(field describe_ms) $(field configure_ms) $(field total_ms)" >>"$steps"
done
if awk 'NF != 7 { bad = 1 } END { exit !bad }' "$steps"; then
	warn "bench-cold-exec: unreadable launch steps line: $(head -1 "$steps")"
	exit 1
fi
sw=$(median '$1' "$steps")
rest=$(median '$1 - $7' "$steps")
printf 'cold exec steps (%d runs at --log-level debug, medians; wall %.1f ms):' "$STEP_RUNS" "$sw"
col=2
for step in check tls-key start+handshake describe configure; do
	v=$(median "\$$col" "$steps")
	awk -v s="$step" -v v="$v" -v w="$sw" 'BEGIN { printf " %s %.1f ms (%.0f%%),", s, v, 100 * v / w }'
	col=$((col + 1))
done
awk -v v="$rest" -v w="$sw" -v l="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN { printf " agent start+command+shutdown %.1f ms (%.0f%%); load %s\n", v, 100 * v / w, l }'
