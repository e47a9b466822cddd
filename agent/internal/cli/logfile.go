package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/yuzugo/yuzu/sdk/rows"
	"github.com/yuzugo/yuzu/sdk/safefile"
)

// Logs of `run` go to stderr unless --log-file names a file: under systemd stderr is
// the journal, which rotates itself. A Windows service and a launchd daemon have no
// such sink: a Windows service logs to service.WindowsLogFile when the configuration
// names no log-file, and the macOS package's configuration names
// /Library/Logs/yuzu/agent.log (the launchd plist names only a stderr file). The log
// file is rotated by size (docs/operations.md, "Logs").

// Defaults and bounds of the log file's rotation.
const (
	defaultLogMaxMiB   = 64
	defaultLogMaxFiles = 5
	maxLogMaxMiB       = 1 << 14
	maxLogMaxFiles     = 1000
)

// logValues are the log file settings as `config show` prints them.
func logValues(cfg config) map[string]string {
	v := map[string]string{"log-file": cfg.logFile, "log-max-mib": cfg.logMaxMiB, "log-max-files": cfg.logMaxFiles}
	if cfg.logFile == "" {
		v["log-file"] = "(stderr)"
	}
	if cfg.logMaxMiB == "" {
		v["log-max-mib"] = strconv.Itoa(defaultLogMaxMiB)
	}
	if cfg.logMaxFiles == "" {
		v["log-max-files"] = strconv.Itoa(defaultLogMaxFiles)
	}
	return v
}

// logNumber reads a whole number setting from low to limit, def when empty.
func logNumber(flag, v string, def, low, limit int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < low || n > limit {
		return 0, usagef("--%s %q: want a whole number from %d to %d", flag, rows.Printable(v), low, limit)
	}
	return n, nil
}

// openLogFile returns the writer `run` logs to: stderr, or the rotated --log-file.
// The file's directory must be one only root or the agent's user can change (else
// someone could plant a link where the agent, as root, appends), and the file itself
// must not be a link or anything but a regular file.
func openLogFile(cfg config, stderr io.Writer) (io.Writer, func(), error) {
	if cfg.logFile == "" {
		return stderr, func() {}, nil
	}
	maxMiB, err := logNumber("log-max-mib", cfg.logMaxMiB, defaultLogMaxMiB, 1, maxLogMaxMiB)
	if err != nil {
		return nil, nil, err
	}
	// At least the current file and one old one: the rotation library reads a count
	// of 0 old files as "keep them all".
	files, err := logNumber("log-max-files", cfg.logMaxFiles, defaultLogMaxFiles, 2, maxLogMaxFiles)
	if err != nil {
		return nil, nil, err
	}
	path := cfg.logFile
	if !filepath.IsAbs(path) {
		return nil, nil, usagef("--log-file %q: want an absolute path", rows.Printable(path))
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, nil, fmt.Errorf("--log-file: %w", err)
	}
	if err := safefile.TrustedDir(dir); err != nil {
		return nil, nil, fmt.Errorf("--log-file: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("--log-file: %s is %s", path, safefile.Describe(fi.Mode()))
	}
	lj := &lumberjack.Logger{Filename: path, MaxSize: maxMiB, MaxBackups: files - 1}
	return lj, func() { _ = lj.Close() }, nil
}
