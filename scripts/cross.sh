#!/usr/bin/env bash
# `make cross`: for every GOOS/GOARCH in CROSS_PLATFORMS (linux, darwin, windows x amd64,
# arm64), with cgo off:
#   - link the agent and every shipped plugin (the binaries a release would carry),
#   - compile every package of every workspace module (examples and test plugins too),
#   - `go vet` every package of every module, tests included.
# Only Linux runs tests here, so this is what keeps the macOS and Windows legs honest.
# A module with no packages (yet, or for that platform) is reported and left out.
#
# One go invocation covers all modules (`go vet ./sdk/... ./agent/... ...` from the
# workspace root), which lets go schedule the work across cores and saves loading the
# workspace again for every module.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

export CGO_ENABLED=0
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

mapfile -t mods < <(modules)
declare -A shipped # package dir -> binary name
shipped[$ROOT/agent/cmd/yuzu-agent]=yuzu-agent
while read -r name dir; do
	shipped[$ROOT/$dir]=yuzu-plugin-$name
done < <(shipped_plugins)

failed=()
for platform in $CROSS_PLATFORMS; do
	export GOOS=${platform%/*} GOARCH=${platform#*/}
	start=$SECONDS
	ok=1

	patterns=()
	for mod in "${mods[@]}"; do
		patterns+=("./$mod/...")
	done
	# -e: a package with errors is still listed, so the build below reports them.
	listing=$(go list -e -f '{{.Dir}} {{.Name}}' "${patterns[@]}" 2>/dev/null || true)

	present=()
	empty=()
	for mod in "${mods[@]}"; do
		if grep -q "^${ROOT}/${mod}[/ ]" <<<"$listing"; then
			present+=("./$mod/...")
		else
			empty+=("$mod")
		fi
	done
	mains=()
	linked=()
	while read -r dir name; do
		if [[ $name == main && -n ${shipped[$dir]:-} ]]; then
			mains+=("$dir")
			linked+=("${shipped[$dir]}")
		fi
	done <<<"$listing"

	if ((${#mains[@]} > 0)); then
		mkdir -p "$out/$platform"
		if ! go build -o "$out/$platform/" "${mains[@]}"; then
			warn "cross $platform: FAILED to link ${linked[*]}"
			ok=0
		fi
	fi
	if ((${#present[@]} > 0)); then
		if ! go build "${present[@]}"; then
			warn "cross $platform: FAILED: go build ${present[*]}"
			ok=0
		fi
		if ! go vet "${present[@]}"; then
			warn "cross $platform: FAILED: go vet ${present[*]}"
			ok=0
		fi
	fi

	msg="linked [${linked[*]:-none}], built+vetted [${present[*]:-none}]"
	if ((${#empty[@]} > 0)); then
		msg+=", no packages yet in [${empty[*]}]"
	fi
	if ((ok)); then
		say "cross $platform: ok in $((SECONDS - start))s: $msg"
	else
		say "cross $platform: FAILED in $((SECONDS - start))s: $msg"
		failed+=("$platform")
	fi
done

if ((${#failed[@]} > 0)); then
	warn "cross: FAILED for ${failed[*]}"
	exit 1
fi
say "cross: all platforms ok ($CROSS_PLATFORMS)"
