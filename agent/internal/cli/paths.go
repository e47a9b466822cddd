package cli

import (
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/internal/agentconf"
	"github.com/yuzugo/yuzu/sdk/rows"
)

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

// noteUserDataDir says, once at start, that the data dir a user's agent would have
// used exists and is not used: a system agent's state moved to the machine's
// directory, and nothing is moved silently (the operator moves the files, or passes
// --data-dir to keep the old place).
func noteUserDataDir(log hclog.Logger, goos string, getenv func(string) string, dataDir string) {
	old := agentconf.DataDir(goos, getenv, false)
	if old == dataDir || !filepath.IsAbs(old) {
		return
	}
	if fi, err := os.Lstat(old); err == nil && fi.IsDir() {
		log.Warn("a data dir from a per-user default exists and is not used; move its files or pass --data-dir to keep using it",
			"not_used", rows.Printable(old), "data_dir", rows.Printable(dataDir))
	}
}

// defaultPublishersDir is where the publishers' keys are looked for: publishers/
// beside the default configuration file (/etc/yuzu/publishers, %ProgramData%\yuzu\
// publishers, /Library/Application Support/yuzu/publishers). docs/agent.md, "Plugin
// catalog and signatures".
func defaultPublishersDir(goos string, getenv func(string) string) string {
	return filepath.Join(filepath.Dir(defaultConfigPath(goos, getenv)), "publishers")
}

// trustDir is where the agent keeps the version floors and the key-set updates it
// accepted: in the data dir, so that a plugin dir replaced wholesale does not reset
// them.
func trustDir(cfg config) string { return filepath.Join(cfg.dataDir, "trust") }
