#!/usr/bin/env bash
# Two clean clones of this commit, in two different directories, build byte-identical
# binaries (scripts/build.sh: -trimpath, the commit's short hash, no time): a vendor can
# publish one checksum per platform, and anyone can rebuild it. The build cache makes
# the second build cheap; -trimpath keeps the cache keys free of the directory.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if ! git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
	warn "reproducible: not a git checkout: there is no commit to clone twice"
	exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for side in a b; do
	# Different depths of path, so that a path leaking into a binary shows.
	dir=$work/$side
	[[ $side == b ]] && dir=$work/b/deeper/checkout
	mkdir -p "$(dirname "$dir")"
	git clone -q --no-hardlinks "$ROOT" "$dir"
	(cd "$dir" && BIN_DIR="$work/bin-$side" bounded "build in clone $side" 600 scripts/build.sh >/dev/null) || exit 1
done
(cd "$work/bin-a" && find . -type f ! -name catalog.json -print0 | sort -z | xargs -0 sha256sum) >"$work/a.sums"
(cd "$work/bin-b" && find . -type f ! -name catalog.json -print0 | sort -z | xargs -0 sha256sum) >"$work/b.sums"
n=$(wc -l <"$work/a.sums")
if ! diff -u "$work/a.sums" "$work/b.sums"; then
	echo "FAIL reproducible: two clones of $(git -C "$ROOT" rev-parse --short HEAD) built different bytes (above)"
	exit 1
fi
echo "PASS reproducible: two clones built $n identical binaries"
