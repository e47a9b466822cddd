#!/usr/bin/env bash
# Builds what `make build` ships:
#   bin/yuzu-agent                       from ./agent/cmd/yuzu-agent
#   bin/plugins/yuzu-plugin-NAME         from ./plugin-NAME, for every plugin module
#   bin/plugins/catalog.json             the plugin catalog: each plugin's checksum and
#                                        system (docs/agent.md "Plugin catalog and signatures")
#   bin/yuzu-testserver                  from ./integration/cmd/yuzu-testserver: the test
#                                        fleet server's console, for a developer's machine
#                                        (docs/fleet.md); never installed on a host
#   bin/yuzu-bundle                      from ./integration/cmd/yuzu-bundle: makes the signed
#                                        bundles the agent updates itself from (docs/fleet.md)
# With GOOS=windows every binary gets its .exe.
# Binaries are mode 0755: the agent refuses a plugin that is group- or world-writable,
# whatever the caller's umask. Example plugins (sdk/examples) and test plugins
# (integration) are never installed here.
#
# A module that is still a bare go.mod is reported and left out; a module with Go code
# but without the expected main package is an error.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BIN_DIR=${BIN_DIR:-$ROOT/bin}
PLUGIN_DIR=$BIN_DIR/plugins
# CGO off: the binaries are static and match what `make cross` checks.
export CGO_ENABLED=${CGO_ENABLED:-0}
# Release binaries drop the symbol table and DWARF (-s -w): a third smaller, so the
# SHA-256 the agent checks before every plugin start costs a third less. Link-only
# flags, so the compile cache stays shared with `make cross`. LDFLAGS adds to them.
# The agent's version comes from one place, the VERSION file (YUZU_VERSION overrides
# it), as in every package scripts/package.sh makes; plugins keep their own versions,
# declared in their code.
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
version=${YUZU_VERSION:-$(cat "$ROOT/VERSION")}
# -trimpath: no path of this checkout in the binaries, so the same commit builds the
# same bytes in any clone (scripts/test-reproducible.sh checks it).
BUILD_FLAGS=(-trimpath -ldflags "-s -w -X github.com/yuzugo/yuzu/agent/internal/cli.Version=$version -X github.com/yuzugo/yuzu/agent/internal/cli.Commit=$commit ${LDFLAGS:-}")
exe=
if [[ $(go env GOOS) == windows ]]; then exe=.exe; fi

mkdir -p "$PLUGIN_DIR"
chmod 0755 "$BIN_DIR" "$PLUGIN_DIR"

# install_main PKGDIR DEST builds the main package in PKGDIR to DEST. It builds to a
# temporary name and renames, so a running agent never sees a half-written binary.
install_main() {
	local pkgdir=$1 dest=$2$exe
	# Explicit returns: set -e does not apply inside a function called from `||`.
	go build "${BUILD_FLAGS[@]}" -o "$dest.tmp" "./$pkgdir" || return 1
	chmod 0755 "$dest.tmp" || return 1
	mv -f "$dest.tmp" "$dest" || return 1
	say "build: ${dest#"$ROOT"/}"
}

failed=0

if is_main agent/cmd/yuzu-agent; then
	install_main agent/cmd/yuzu-agent "$BIN_DIR/yuzu-agent" || failed=1
elif ! has_go_files agent; then
	say "build: agent has no Go code yet: bin/yuzu-agent not built"
else
	warn "build: agent/cmd/yuzu-agent is not a main package: cannot build bin/yuzu-agent"
	failed=1
fi

for tool in yuzu-testserver yuzu-bundle; do
	if is_main "integration/cmd/$tool"; then
		install_main "integration/cmd/$tool" "$BIN_DIR/$tool" || failed=1
	fi
done

built=()
while read -r name dir; do
	if is_main "$dir"; then
		if install_main "$dir" "$PLUGIN_DIR/yuzu-plugin-$name"; then
			built+=("yuzu-plugin-$name$exe")
		else
			failed=1
		fi
	elif ! has_go_files "$dir"; then
		say "build: $dir has no Go code yet: yuzu-plugin-$name not built"
	else
		warn "build: $dir has Go code but no main package at its root: cannot build yuzu-plugin-$name"
		failed=1
	fi
done < <(shipped_plugins)

# The plugin catalog records the plugins built above by their checksum (yuzu-agent
# plugins pin: no start, so a cross build is recorded too); their versions are learnt
# when they first run. Entries of other plugins (one added with plugins add) are kept.
# The agent that pins is this machine's own build, whatever GOOS this build is for.
if ((${#built[@]} > 0)); then
	pin=("$BIN_DIR/yuzu-agent$exe")
	if [[ $(go env GOOS)/$(go env GOARCH) != $(go env GOHOSTOS)/$(go env GOHOSTARCH) || ! -x $BIN_DIR/yuzu-agent$exe ]]; then
		pin=(env -u GOOS -u GOARCH go run ./agent/cmd/yuzu-agent)
	fi
	files=()
	for b in "${built[@]}"; do files+=("$PLUGIN_DIR/$b"); done
	# No publisher keys for a build of one's own: its plugins are unsigned.
	if (cd "$ROOT" && "${pin[@]}" --plugin-dir "$PLUGIN_DIR" --publishers-dir "$BIN_DIR/no-publishers" --log-level warn plugins pin "${files[@]}") >/dev/null; then
		say "build: ${PLUGIN_DIR#"$ROOT"/}/catalog.json (${#built[@]} plugins pinned)"
	else
		warn "build: recording the plugins in ${PLUGIN_DIR#"$ROOT"/}/catalog.json failed"
		failed=1
	fi
fi

exit "$failed"
