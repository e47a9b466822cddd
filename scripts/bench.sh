#!/usr/bin/env bash
# `make bench`: the Go benchmarks of every package that has any (agent, integration, sdk,
# the plugins and whatever grows them), the cold-start time of a whole `yuzu-agent exec`
# (scripts/bench-cold-exec.sh), the ratios of issue 34 side by side with their goals
# (scripts/bench-ratios.sh), then every plugin-*/bench/*.sh side-by-side script.
# Benchmarks are discovered with `go test -list`.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

failed=0
while read -r mod; do
	if [[ -z $(packages "$mod") ]]; then
		say "bench: $mod has no packages yet: no benchmarks"
		continue
	fi
	if ! listing=$(cd "$mod" && go test -list '^Benchmark' ./... 2>&1); then
		warn "$listing"
		warn "bench: FAILED to list the benchmarks of $mod"
		failed=1
		continue
	fi
	# A package's "ok <pkg>" line follows the names it matched.
	pkgs=$(awk '$1 ~ /^Benchmark/ { found = 1 } $1 == "ok" { if (found) print $2; found = 0 }' <<<"$listing")
	if [[ -z $pkgs ]]; then
		say "bench: $mod has no benchmarks"
		continue
	fi
	say "bench: $mod: ${pkgs//$'\n'/ }"
	# shellcheck disable=SC2086 # one argument per package
	(cd "$mod" && go test -run '^$' -bench . -benchmem $pkgs) || failed=1
done < <(modules)

scripts/bench-cold-exec.sh || failed=1

# Issue 34's ratios against the base build and the raw go-plugin twins, beside their goals.
scripts/bench-ratios.sh || failed=1

# Side-by-side scripts a plugin keeps in its bench/ directory (each compares the plugin
# with a reference measured in the same run and prints the ratios).
for script in plugin-*/bench/*.sh; do
	[[ -x $script ]] || continue
	say "bench: $script"
	"$script" || failed=1
done
exit "$failed"
