# shellcheck shell=bash
# The Wine environment of the Windows leg (`make test-windows`, docs/windows.md); source
# it after lib.sh. Everything Wine writes stays under WINE_DIR, the repository's
# git-ignored .cache/wine: the prefix, and the XDG directories Wine's menu builder
# would otherwise fill in $HOME. Those XDG variables are given to Wine commands only
# (wine_env), never exported to go, whose own configuration lives under XDG_CONFIG_HOME.

WINE_DIR=${YUZU_WINE_DIR:-$ROOT/.cache/wine}
# Debian 12 has no wine64 on PATH: /usr/bin/wine is a wrapper that looks for wine32
# first and prints a hint about it. The 64-bit loader is called directly.
WINE64=/usr/lib/wine/wine64
WINESERVER=/usr/lib/wine/wineserver
# shellcheck disable=SC2034 # used by the scripts that source this file
wine_env=(
	-u DISPLAY -u WAYLAND_DISPLAY
	WINEPREFIX="$WINE_DIR/prefix"
	WINEDEBUG=-all
	XDG_DATA_HOME="$WINE_DIR/xdg/data"
	XDG_CONFIG_HOME="$WINE_DIR/xdg/config"
)

# wine_do CMD... runs CMD in the Wine environment, with no standard input.
wine_do() { env "${wine_env[@]}" "$@" </dev/null; }

# bounded NAME SECONDS CMD... runs CMD, stopping it (and everything in its process
# group) after SECONDS; a step that hangs fails with its name.
bounded() {
	local name=$1 limit=$2 rc=0
	shift 2
	timeout --kill-after=10 "$limit" "$@" || rc=$?
	if ((rc == 124 || rc == 137)); then
		warn "windows: step '$name' did not finish within ${limit}s: stopped"
	elif ((rc != 0)); then
		warn "windows: step '$name' failed (exit $rc)"
	fi
	return "$rc"
}

# wine_overlay prints the path of a `go build -overlay` file for test binaries run
# under Wine 8.0, writing it first. Wine answers STATUS_NOT_IMPLEMENTED to the
# FileDispositionInformationEx delete that Go's os.RemoveAll (and so every t.TempDir
# cleanup) starts with; Go falls back to the classic delete only for the statuses older
# Windows gives. The overlay adds Wine's status to that list in a copy of the one
# standard-library file, so test temp dirs can be removed. The shipped binaries the
# end-to-end test runs are built without it (docs/windows.md).
wine_overlay() {
	local src dir=$WINE_DIR/overlay n
	src=$(go env GOROOT)/src/internal/syscall/windows/at_windows.go
	mkdir -p "$dir"
	n=$(grep -c 'STATUS_NOT_SUPPORTED:' "$src" || true)
	if [[ $n != 1 ]]; then
		warn "windows: $src no longer has the one fallback list the Wine overlay extends: update wine_overlay in scripts/wine.sh"
		return 1
	fi
	sed 's|STATUS_NOT_SUPPORTED:|STATUS_NOT_SUPPORTED, NTStatus(0xC0000002) /* STATUS_NOT_IMPLEMENTED: Wine 8.0, scripts/wine.sh */:|' \
		"$src" >"$dir/at_windows.go"
	printf '{"Replace":{"%s":"%s"}}\n' "$src" "$dir/at_windows.go" >"$dir/overlay.json"
	echo "$dir/overlay.json"
}
