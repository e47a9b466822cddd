#!/usr/bin/env bash
# `make fuzz`: runs every fuzz target in every module for FUZZTIME (default 10s).
# Targets are discovered with `go test -list '^Fuzz'`, so a new FuzzX is picked up with
# no change here. New failing inputs land in the package's testdata/fuzz/ as usual.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FUZZTIME=${FUZZTIME:-10s}
targets=() # "module package FuzzName"
listing_failed=0

while read -r mod; do
	if [[ -z $(packages "$mod") ]]; then
		say "fuzz: $mod has no packages yet: no fuzz targets"
		continue
	fi
	# `go test -list` prints a package's matching names, then its "ok  <pkg>" line.
	if ! listing=$(cd "$mod" && go test -list '^Fuzz' ./... 2>&1); then
		warn "$listing"
		warn "fuzz: FAILED to list the fuzz targets of $mod"
		listing_failed=1
		continue
	fi
	names=()
	while read -r first second _; do
		case $first in
		Fuzz*) names+=("$first") ;;
		ok)
			for n in "${names[@]}"; do
				targets+=("$mod $second $n")
			done
			names=()
			;;
		esac
	done <<<"$listing"
done < <(modules)

if ((${#targets[@]} == 0)); then
	say "fuzz: no fuzz targets in any module (nothing to fuzz)"
	exit "$listing_failed"
fi

say "fuzz: ${#targets[@]} targets, $FUZZTIME each"
failed=()
for t in "${targets[@]}"; do
	read -r mod pkg name <<<"$t"
	say "fuzz: $pkg $name"
	# -fuzz takes one target in one package; -run '^$' skips the ordinary tests.
	if ! (cd "$mod" && go test -run '^$' -fuzz "^$name\$" -fuzztime "$FUZZTIME" "$pkg"); then
		failed+=("$pkg.$name")
	fi
done

if ((${#failed[@]} > 0)); then
	warn "fuzz: FAILED: ${failed[*]} (the failing input is saved under the package's testdata/fuzz/)"
	exit 1
fi
((listing_failed == 0)) || exit 1
say "fuzz: all ${#targets[@]} targets ok"
