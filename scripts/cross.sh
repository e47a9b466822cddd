#!/usr/bin/env bash
# `make cross`: for every GOOS/GOARCH in CROSS_PLATFORMS (linux, darwin, windows x amd64,
# arm64), with cgo off:
#   - link the agent and every shipped plugin (the binaries a release would carry),
#   - compile every package of every workspace module (examples and test plugins too),
#   - `go vet` every package of every module, tests included.
# Only Linux runs tests here, so this is what keeps the macOS and Windows legs honest.
# A module that is still a bare go.mod is reported and skipped.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

export CGO_ENABLED=0
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

mapfile -t mods < <(modules)
failed=()

for platform in $CROSS_PLATFORMS; do
	export GOOS=${platform%/*} GOARCH=${platform#*/}
	start=$SECONDS
	ok=1
	linked=()
	ext=
	[[ $GOOS == windows ]] && ext=.exe

	# The release binaries, linked for real.
	mains=()
	is_main agent/cmd/yuzu-agent && mains+=("agent/cmd/yuzu-agent yuzu-agent")
	while read -r name dir; do
		is_main "$dir" && mains+=("$dir yuzu-plugin-$name")
	done < <(shipped_plugins)
	for m in "${mains[@]}"; do
		read -r dir bin <<<"$m"
		if go build -o "$out/$platform/$bin$ext" "./$dir"; then
			linked+=("$bin")
		else
			warn "cross $platform: FAILED to build $bin from ./$dir"
			ok=0
		fi
	done

	# Everything else: compile and vet per module.
	vetted=()
	for mod in "${mods[@]}"; do
		if [[ -z $(packages "$mod") ]]; then
			say "cross $platform: $mod has no packages for $GOOS/$GOARCH yet: nothing to build or vet"
			continue
		fi
		if ! (cd "$mod" && go build ./... && go vet ./...); then
			warn "cross $platform: FAILED in module $mod (go build ./... && go vet ./...)"
			ok=0
			continue
		fi
		vetted+=("$mod")
	done

	if ((ok)); then
		say "cross $platform: ok in $((SECONDS - start))s: linked [${linked[*]:-none}], built+vetted [${vetted[*]:-none}]"
	else
		failed+=("$platform")
	fi
done

if ((${#failed[@]} > 0)); then
	warn "cross: FAILED for ${failed[*]}"
	exit 1
fi
if [[ ! " ${mains[*]:-} " =~ yuzu-agent ]]; then
	say "cross: note: agent/cmd/yuzu-agent does not exist yet, so no agent binary was linked"
fi
say "cross: all platforms ok ($CROSS_PLATFORMS)"
