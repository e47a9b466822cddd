#!/usr/bin/env bash
# Sets up the Windows leg's Wine (docs/windows.md), idempotently:
#   1. Wine and the signing tools, through scripts/deps.sh windows (apt-get);
#   2. a private prefix in .cache/wine/prefix (nothing is written to $HOME);
#   3. bcryptprimitives.dll, the 1 KiB shim from tools/mkprng that Go 1.22+ binaries
#      need at start and Wine 8.0 lacks;
#   4. drive N: staged as a network drive (a symbolic link to .cache/wine/netshare and
#      Wine's drive-type registry value), for find_by_hash's remote-drive guard.
# A prefix whose set-up did not finish (no stamp) is made again from nothing. Every
# step is bounded; the stamp is written last. Wine's own chatter goes to
# .cache/wine/setup.log, shown when a step fails.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=wine.sh
source "$ROOT/scripts/wine.sh"

prefix=$WINE_DIR/prefix
stamp=$WINE_DIR/prefix.ok
log=$WINE_DIR/setup.log
mkdir -p "$WINE_DIR"
: >"$log"

fail() {
	warn "wine-setup: $1 (log: ${log#"$ROOT"/})"
	tail -n 20 "$log" >&2
	exit 1
}

bounded "install Wine" 600 scripts/deps.sh windows || exit 1

# The shim generator is ours (tools/mkprng, outside go.work like the other tools).
mkdir -p "$WINE_DIR/bin"
bounded "build tools/mkprng" 300 env -C "$ROOT/tools" GOWORK=off go build -o "$WINE_DIR/bin/mkprng" ./mkprng ||
	fail "building tools/mkprng failed"

if [[ ! -f $stamp ]]; then
	rm -rf "$prefix" "$WINE_DIR/xdg"
	mkdir -p "$WINE_DIR/xdg/data" "$WINE_DIR/xdg/config" "$WINE_DIR/netshare"
	say "wine-setup: making the prefix ${prefix#"$ROOT"/}"
	bounded "wineboot --init" 180 env "${wine_env[@]}" "$WINE64" wineboot --init </dev/null >>"$log" 2>&1 ||
		fail "wineboot --init failed"
	bounded "wineserver -w" 120 env "${wine_env[@]}" "$WINESERVER" -w >>"$log" 2>&1 || fail "wineserver -w failed"
fi

# Written every time (a deterministic 1 KiB file): a changed generator takes effect.
"$WINE_DIR/bin/mkprng" -o "$prefix/drive_c/windows/system32/bcryptprimitives.dll" || fail "mkprng failed"

if [[ ! -f $stamp ]]; then
	# Drive letters are links in dosdevices; the registry value makes N: report
	# DRIVE_REMOTE. It is read when the wine server starts, hence the -k.
	ln -sfn "$WINE_DIR/netshare" "$prefix/dosdevices/n:"
	bounded "reg add N: network" 120 env "${wine_env[@]}" "$WINE64" reg add 'HKLM\Software\Wine\Drives' /v n: /d network /f \
		</dev/null >>"$log" 2>&1 || fail "staging N: as a network drive failed"
	bounded "wineserver -k" 60 env "${wine_env[@]}" "$WINESERVER" -k >>"$log" 2>&1 || true
	bounded "wineserver -w" 60 env "${wine_env[@]}" "$WINESERVER" -w >>"$log" 2>&1 || true
	date -u +%FT%TZ >"$stamp"
fi
say "wine-setup: prefix ready ($(du -sh "$prefix" 2>/dev/null | cut -f1)): ${prefix#"$ROOT"/}"
