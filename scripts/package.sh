#!/usr/bin/env bash
# `make package`: the agent as fleets install it, in dist/ (docs/packages.md):
#
#   yuzu-agent_<version>_amd64.deb, yuzu-agent_<version>_arm64.deb   nfpm
#   yuzu-agent_<version>_amd64.rpm, yuzu-agent_<version>_arm64.rpm   nfpm
#   yuzu-agent-<version>-x64.msi                                     wixl (msitools)
#   yuzu-agent-<version>-darwin-amd64.tar.gz, ...-darwin-arm64.tar.gz  tarball with
#                                      install.sh (no .pkg tooling exists here)
#   SHA256SUMS                         `sha256sum` lines for every file above
#
# The version is the agent's, from the VERSION file (YUZU_VERSION overrides it), stamped
# into the agent (-X cli.Version) and every package; the plugins keep the versions
# their code declares. Two builds of one commit give the same files, wherever the
# clone is: binaries with -trimpath, every file time SOURCE_DATE_EPOCH (the commit's
# time unless set), the MSI's codes derived from the version and the commit, tarballs
# sorted with fixed owners.
#
# Environment:
#   PACKAGE_TARGETS  a subset of: deb-amd64 deb-arm64 rpm-amd64 rpm-arm64 msi
#                    darwin-amd64 darwin-arm64 (default: all); the test legs build
#                    only what they install
#   DIST_DIR         where the packages go (default dist/); it is emptied first
#   YUZU_VERSION     the version to stamp (default: the VERSION file)
#   YUZU_PACKAGE_LINUX_AGENT  a file to package as the Linux agent instead of the one
#                    built here: the deb leg's package whose agent exits at start
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

targets=${PACKAGE_TARGETS:-"deb-amd64 deb-arm64 rpm-amd64 rpm-arm64 msi darwin-amd64 darwin-arm64"}
dist=${DIST_DIR:-$ROOT/dist}
version=${YUZU_VERSION:-$(cat "$ROOT/VERSION")}
if ! [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$ ]]; then
	warn "package: version '$version' is not MAJOR.MINOR.PATCH[-PRERELEASE]"
	exit 1
fi
commit=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
if [[ -z ${SOURCE_DATE_EPOCH:-} ]]; then
	SOURCE_DATE_EPOCH=$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || echo 0)
fi
export SOURCE_DATE_EPOCH
# The code's own default (what `go test` and `go run` builds report) should say the same.
code_version=$(sed -n 's/^[[:space:]]*Version = "\(.*\)"$/\1/p' agent/internal/cli/cli.go | head -1)
if [[ -n $code_version && $code_version != "$(cat "$ROOT/VERSION")" ]]; then
	warn "package: note: VERSION says $(cat "$ROOT/VERSION"), agent/internal/cli.Version's default says $code_version"
fi

needs_msi=0
for t in $targets; do
	case $t in
	deb-amd64 | deb-arm64 | rpm-amd64 | rpm-arm64 | darwin-amd64 | darwin-arm64) ;;
	msi) needs_msi=1 ;;
	*)
		warn "package: unknown target '$t'"
		exit 1
		;;
	esac
done
if [[ $targets == *deb-* || $targets == *rpm-* ]] && [[ ! -x $TOOLS_BIN/nfpm ]]; then
	bounded "install nfpm" 600 tools/install.sh nfpm >&2 || exit 1
fi
if ((needs_msi)) && ! { command -v wixl && command -v msibuild && command -v faketime; } >/dev/null 2>&1; then
	bounded "install wixl" 600 scripts/deps.sh package || exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$dist"
mkdir -p "$dist"

# build GOOS GOARCH: the agent and every shipped plugin into $work/stage/GOOS-GOARCH.
# No plugin manifest: every package has the agent install its plugins into its plugin
# catalog (plugins add --if-newer) at installation.
build() {
	local goos=$1 goarch=$2 ext="" stage=$work/stage/$1-$2 name dir
	[[ $goos == windows ]] && ext=.exe
	[[ -d $stage ]] && return 0
	mkdir -p "$stage/plugins"
	local flags=(-trimpath -ldflags "-s -w -X github.com/yuzugo/yuzu/agent/internal/cli.Version=$version -X github.com/yuzugo/yuzu/agent/internal/cli.Commit=${commit:0:7}")
	GOOS=$goos GOARCH=$goarch bounded "build the agent for $goos/$goarch" 900 \
		go build "${flags[@]}" -o "$stage/yuzu-agent$ext" ./agent/cmd/yuzu-agent || return 1
	while read -r name dir; do
		GOOS=$goos GOARCH=$goarch bounded "build yuzu-plugin-$name for $goos/$goarch" 900 \
			go build "${flags[@]}" -o "$stage/plugins/yuzu-plugin-$name$ext" "./$dir" || return 1
	done < <(shipped_plugins)
	chmod 0755 "$stage/yuzu-agent$ext" "$stage"/plugins/*
	touch -d "@$SOURCE_DATE_EPOCH" "$stage/yuzu-agent$ext" "$stage"/plugins/*
}

# scripts STAGE assembles the maintainer scripts into STAGE/scripts/{deb,rpm}: each is
# the shared functions and its own part, with this package's version (common.sh).
scripts() {
	local stage=$1 kind part out
	for kind in deb:postinst deb:prerm deb:postrm rpm:post rpm:preun rpm:postun; do
		part=${kind/:/-}
		out=$stage/scripts/${kind%%:*}/${kind#*:}
		mkdir -p "$(dirname "$out")"
		{
			printf '#!/bin/sh\n# yuzu-agent %s %s (scripts/package.sh from packaging/linux/scripts)\nset -e\n' "$version" "${kind#*:}"
			printf "yuzu_version='%s'\n" "$version"
			cat packaging/linux/scripts/common.sh
			cat "packaging/linux/scripts/$part.sh"
		} >"$out"
		chmod 0755 "$out"
	done
}

# linux FORMAT ARCH: the .deb or .rpm of one architecture, with nfpm.
linux() {
	local format=$1 arch=$2 stage=$work/stage/linux-$2
	build linux "$arch" || return 1
	if [[ -n ${YUZU_PACKAGE_LINUX_AGENT:-} ]]; then
		install -m 0755 "$YUZU_PACKAGE_LINUX_AGENT" "$stage/yuzu-agent"
		touch -d "@$SOURCE_DATE_EPOCH" "$stage/yuzu-agent"
	fi
	[[ -d $stage/scripts ]] || scripts "$stage"
	sed -e "s|\${YUZU_VERSION}|$version|g" -e "s|\${YUZU_ARCH}|$arch|g" -e "s|\${YUZU_STAGE}|$stage|g" \
		packaging/nfpm.yaml >"$stage/nfpm.yaml"
	local out=$dist/yuzu-agent_${version}_$arch.$format
	bounded "nfpm $format $arch" 300 "$TOOLS_BIN/nfpm" package --config "$stage/nfpm.yaml" \
		--packager "$format" --target "$out" >&2 || return 1
	say "package: ${out#"$ROOT"/}"
}

# guid TEXT prints a GUID made from TEXT's SHA-256: the same text, the same GUID.
guid() {
	local h
	h=$(printf '%s' "$1" | sha256sum | tr 'a-f' 'A-F')
	printf '{%s-%s-5%s-%s-%s}\n' "${h:0:8}" "${h:8:4}" "${h:13:3}" "${h:16:4}" "${h:20:12}"
}

msi() {
	local stage=$work/stage/windows-amd64 out=$dist/yuzu-agent-$version-x64.msi
	build windows amd64 || return 1
	cp packaging/windows/msi-setup.cmd "$stage/msi-setup.cmd"
	cp packaging/windows/agent.yaml "$stage/agent.yaml.default"
	touch -d "@$SOURCE_DATE_EPOCH" "$stage/msi-setup.cmd" "$stage/agent.yaml.default"
	# Windows Installer versions are numeric: a pre-release suffix is left out.
	local numeric=${version%%-*}
	# wixl takes file sources relative to where it runs, not absolute paths. It stamps
	# the package with the time of the build and a random package code (the Package
	# element's Id is not read): it runs at the frozen time SOURCE_DATE_EPOCH
	# (libfaketime), and msibuild then sets the package code (the summary's revision
	# number) derived from the version and the commit, at that time too. wixl also
	# writes some tables in an order that changed from run to run (one in three runs
	# differed): an order taken from memory addresses, which setarch -R (no address
	# randomisation) makes the same every run (six runs in a row, one MSI).
	local at package_code
	at=$(date -u -d "@$SOURCE_DATE_EPOCH" '+%Y-%m-%d %H:%M:%S')
	package_code=$(guid "yuzu-agent msi package $version $commit")
	(cd "$stage" && TZ=UTC bounded "wixl" 300 faketime "$at" setarch "$(uname -m)" -R wixl -a x64 -o "$out" \
		-D "Version=$numeric" -D "Stage=." \
		-D "ProductCode=$(guid "yuzu-agent msi product $numeric")" \
		"$ROOT/packaging/windows/yuzu-agent.wxs" >&2) || return 1
	TZ=UTC bounded "msibuild" 60 faketime "$at" msibuild "$out" \
		-s "yuzu endpoint agent $version" yuzu "x64;1033" "$package_code" >&2 || return 1
	say "package: ${out#"$ROOT"/}"
}

darwin() {
	local arch=$1 stage=$work/stage/darwin-$1 name=yuzu-agent-$version-darwin-$1
	build darwin "$arch" || return 1
	local tree=$work/tar/$name
	mkdir -p "$tree"
	cp -a "$stage/yuzu-agent" "$stage/plugins" "$tree/"
	install -m 0755 packaging/macos/install.sh packaging/macos/uninstall.sh "$tree/"
	install -m 0644 packaging/macos/agent.yaml "$tree/agent.yaml.default"
	install -m 0644 docs/packages.md "$tree/packages.md"
	find "$tree" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
	tar -C "$work/tar" --sort=name --owner=0 --group=0 --numeric-owner --format=gnu \
		--mtime="@$SOURCE_DATE_EPOCH" -cf - "$name" | gzip -n -9 >"$dist/$name.tar.gz"
	say "package: ${dist#"$ROOT"/}/$name.tar.gz"
}

failed=0
for t in $targets; do
	case $t in
	deb-* | rpm-*) linux "${t%%-*}" "${t#*-}" || failed=1 ;;
	msi) msi || failed=1 ;;
	darwin-*) darwin "${t#*-}" || failed=1 ;;
	esac
done
(cd "$dist" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | sort | xargs -r sha256sum --) >"$dist/SHA256SUMS"
say "package: ${dist#"$ROOT"/}/SHA256SUMS ($(wc -l <"$dist/SHA256SUMS") files, version $version)"
exit "$failed"
