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

# Its bounded steps (lib.sh) are named as the Windows leg's.
LEG=windows
