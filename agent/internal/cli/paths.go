package cli

import (
	"os"
	"path/filepath"
)

// defaultDataDir is the upstream default state directory for goos: Windows
// %LOCALAPPDATA%\yuzu, macOS ~/Library/Application Support/yuzu, elsewhere
// $XDG_DATA_HOME/yuzu else ~/.local/share/yuzu; ./yuzu_data when none applies.
func defaultDataDir(goos string, getenv func(string) string) string {
	home := getenv("HOME")
	switch goos {
	case "windows":
		if d := getenv("LOCALAPPDATA"); d != "" {
			return d + `\yuzu`
		}
	case "darwin":
		if home != "" {
			return filepath.Join(home, "Library", "Application Support", "yuzu")
		}
	default:
		if d := getenv("XDG_DATA_HOME"); d != "" {
			return filepath.Join(d, "yuzu")
		}
		if home != "" {
			return filepath.Join(home, ".local", "share", "yuzu")
		}
	}
	return "yuzu_data"
}

// defaultPluginDir is `plugins` beside the agent binary, else `../plugins` relative to
// it (the upstream install layout), else `plugins` beside it even if missing, so the
// error names a sensible place.
func defaultPluginDir(exe string) string {
	dir := filepath.Dir(exe)
	for _, c := range []string{filepath.Join(dir, "plugins"), filepath.Join(dir, "..", "plugins")} {
		if fi, err := os.Stat(c); err == nil && fi.IsDir() {
			return filepath.Clean(c)
		}
	}
	return filepath.Join(dir, "plugins")
}
