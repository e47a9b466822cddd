#!/usr/bin/env bash
# `make cross`: for every GOOS/GOARCH in CROSS_PLATFORMS (linux, darwin, windows x amd64,
# arm64), with cgo off:
#   - link the agent and every shipped plugin (the binaries a release would carry),
#   - `go vet` every package of every workspace module, tests included (vet type-checks
#     each package against that platform's standard library and dependencies, so a
#     call that does not exist on Windows fails here).
# Only Linux runs tests here, so this is what keeps the macOS and Windows legs honest.
# A module with no packages (yet, or for that platform) is reported and left out.
#
# Cost: each platform compiles the standard library and every dependency once. To keep
# that affordable on two cores:
#   - one go invocation covers all modules (`go vet ./sdk/... ./agent/...` from the
#     workspace root), so the workspace is loaded once and go schedules across cores;
#   - platforms whose binaries nothing runs compile without optimisation (-N -l),
#     which saves a fifth of the compile time; the host platform keeps the default
#     flags so it shares the build cache with `make build` and lint, and so does
#     windows/amd64, whose binaries and tests the Windows leg runs under Wine
#     (scripts/test-windows.sh): what is compiled here is compiled once for both.
# Platforms run one after the other: two go commands compiling into the same build
# cache at once were seen to fail with "could not import os/exec (open : no such file
# or directory)", and running them side by side saved no CPU time.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

export CGO_ENABLED=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mapfile -t mods < <(modules)
patterns=()
for mod in "${mods[@]}"; do
	patterns+=("./$mod/...")
done
declare -A shipped # package dir -> binary name
shipped[$ROOT/agent/cmd/yuzu-agent]=yuzu-agent
while read -r name dir; do
	shipped[$ROOT/$dir]=yuzu-plugin-$name
done < <(shipped_plugins)
host=$(go env GOHOSTOS)/$(go env GOHOSTARCH)

# check PLATFORM links and vets for one platform and prints its verdict; it returns 1
# if anything failed.
check() {
	local platform=$1 start=$SECONDS ok=1 flags=()
	local GOOS=${platform%/*} GOARCH=${platform#*/}
	export GOOS GOARCH
	[[ $platform == "$host" || $platform == windows/amd64 ]] || flags=(-gcflags=all=-N\ -l)

	# -e: a package with errors is still listed, so vet below reports them.
	local listing
	listing=$(go list -e -f '{{.Dir}} {{.Name}}' "${patterns[@]}" 2>/dev/null || true)
	local present=() empty=() mains=() linked=() mod dir name
	for mod in "${mods[@]}"; do
		if grep -q "^${ROOT}/${mod}[/ ]" <<<"$listing"; then
			present+=("./$mod/...")
		else
			empty+=("$mod")
		fi
	done
	while read -r dir name; do
		if [[ $name == main && -n ${shipped[$dir]:-} ]]; then
			mains+=("$dir")
			linked+=("${shipped[$dir]}")
		fi
	done <<<"$listing"

	if ((${#mains[@]} > 0)); then
		mkdir -p "$work/bin/$platform"
		if ! go build "${flags[@]}" -o "$work/bin/$platform/" "${mains[@]}"; then
			echo "cross $platform: FAILED to link ${linked[*]}"
			ok=0
		fi
	fi
	if ((${#present[@]} > 0)) && ! go vet "${flags[@]}" "${present[@]}"; then
		echo "cross $platform: FAILED: go vet ${present[*]}"
		ok=0
	fi

	local msg="linked [${linked[*]:-none}], vetted [${present[*]:-none}]"
	if ((${#empty[@]} > 0)); then
		msg+=", no packages yet in [${empty[*]}]"
	fi
	if ((ok)); then
		echo "cross $platform: ok in $((SECONDS - start))s: $msg"
	else
		echo "cross $platform: FAILED in $((SECONDS - start))s: $msg"
		return 1
	fi
}

failed=()
for platform in $CROSS_PLATFORMS; do
	check "$platform" || failed+=("$platform")
done
if ((${#failed[@]} > 0)); then
	warn "cross: FAILED for ${failed[*]}"
	exit 1
fi
say "cross: all platforms ok ($CROSS_PLATFORMS)"
