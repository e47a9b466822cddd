// Package cli is the yuzu-agent command line.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Version is the agent's version; Commit is set at build time with -ldflags.
var (
	Version = "0.1.0"
	Commit  = "unknown"
)

const defaultTimeout = 600 * time.Second

const usage = `usage: yuzu-agent [flags] <command> [arguments]

commands:
  exec PLUGIN ACTION [key=value ...]   run one action; parameters go to the plugin as they are
  exec DEFINITION-ID [key=value ...]   run a definition (e.g. device.tags.set); parameters are
                                       validated against it first
  plugins                              list plugins: name, version, state, restarts, last error
  plugins add FILE                     trust a plugin binary: copy it into the plugin dir if it
                                       is elsewhere, record its SHA-256 in plugins.sha256
  describe PLUGIN                      print a plugin's manifest
  version                              print the version

flags (before or after the command; environment variable in brackets):
  --plugin-dir DIR    plugin binaries and plugins.sha256 [YUZU_PLUGIN_DIR]
                      (default: plugins/ beside the agent, else ../plugins)
  --data-dir DIR      state directory, e.g. tags.json [YUZU_DATA_DIR]
  --timeout DURATION  command deadline, e.g. 30s or 30 (seconds) [YUZU_TIMEOUT] (default 600s,
                      or the definition's ttl for exec DEFINITION-ID)
  --agent-id ID       agent id handed to plugins [YUZU_AGENT_ID]
  --log-level LEVEL   trace, debug, info, warn or error [YUZU_LOG_LEVEL] (default info)
  --log-format FMT    text or json [YUZU_LOG_FORMAT] (default text)
  --version           print the version

exec prints the rows, then "[result_status] STATUS / COMPLETENESS", then "[rc] N" when the
return code is not 0, and exits with that code. Logs go to stderr.
`

// Exit codes that are not a command's own.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// usageError is a bad flag or argument: usage on stderr, exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// config is the global flags after environment defaults.
type config struct {
	pluginDir  string
	dataDir    string
	timeout    time.Duration
	timeoutSet bool // given by flag or environment, so it beats a definition's ttl
	agentID    string
	logLevel   string
	logFormat  string
	version    bool
	help       bool
}

// valueFlags are the flags that take a value, with their environment variables.
var valueFlags = map[string]string{
	"plugin-dir": "YUZU_PLUGIN_DIR",
	"data-dir":   "YUZU_DATA_DIR",
	"timeout":    "YUZU_TIMEOUT",
	"agent-id":   "YUZU_AGENT_ID",
	"log-level":  "YUZU_LOG_LEVEL",
	"log-format": "YUZU_LOG_FORMAT",
}

// parseArgs separates global flags (accepted anywhere before `--`) from positional
// arguments and applies environment defaults.
func parseArgs(args []string, getenv func(string) string) (config, []string, error) {
	vals := map[string]string{}
	var cfg config
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		name := strings.TrimLeft(a, "-")
		name, val, hasVal := strings.Cut(name, "=")
		switch name {
		case "version":
			cfg.version = true
			continue
		case "h", "help":
			cfg.help = true
			continue
		}
		if _, ok := valueFlags[name]; !ok {
			return cfg, nil, usagef("unknown flag %s", a)
		}
		if !hasVal {
			if i+1 >= len(args) {
				return cfg, nil, usagef("flag --%s needs a value", name)
			}
			i++
			val = args[i]
		}
		vals[name] = val
	}
	get := func(name string) (string, bool) {
		if v, ok := vals[name]; ok {
			return v, true
		}
		v := getenv(valueFlags[name])
		return v, v != ""
	}
	cfg.pluginDir, _ = get("plugin-dir")
	cfg.dataDir, _ = get("data-dir")
	cfg.agentID, _ = get("agent-id")
	cfg.logLevel, _ = get("log-level")
	cfg.logFormat, _ = get("log-format")
	cfg.timeout = defaultTimeout
	if v, ok := get("timeout"); ok {
		d, err := parseTimeout(v)
		if err != nil {
			return cfg, nil, usagef("--timeout %q: %v", v, err)
		}
		cfg.timeout, cfg.timeoutSet = d, true
	}
	if cfg.logLevel == "" {
		cfg.logLevel = "info"
	}
	switch cfg.logLevel {
	case "trace", "debug", "info", "warn", "error":
	default:
		return cfg, nil, usagef("--log-level %q: want trace, debug, info, warn or error", cfg.logLevel)
	}
	if cfg.logFormat == "" {
		cfg.logFormat = "text"
	}
	if cfg.logFormat != "text" && cfg.logFormat != "json" {
		return cfg, nil, usagef("--log-format %q: want text or json", cfg.logFormat)
	}
	return cfg, pos, nil
}

// parseTimeout takes a Go duration ("90s", "2m") or a number of seconds.
func parseTimeout(v string) (time.Duration, error) {
	var d time.Duration
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		d = time.Duration(n * float64(time.Second))
	} else if d, err = time.ParseDuration(v); err != nil {
		return 0, errors.New("want a duration like 30s or a number of seconds")
	}
	if d <= 0 {
		return 0, errors.New("must be positive")
	}
	return d, nil
}

// Main runs the command line and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	cfg, pos, err := parseArgs(args, os.Getenv)
	if err != nil {
		return usageExit(stderr, err)
	}
	if cfg.help {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	if cfg.version || (len(pos) > 0 && pos[0] == "version") {
		fmt.Fprintf(stdout, "yuzu-agent %s (commit %s, %s/%s)\n", Version, Commit, runtime.GOOS, runtime.GOARCH)
		return exitOK
	}
	if len(pos) == 0 {
		return usageExit(stderr, usagef("no command given"))
	}
	if cfg.pluginDir == "" {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintln(stderr, "yuzu-agent: cannot find the plugin dir; pass --plugin-dir:", err)
			return exitFail
		}
		cfg.pluginDir = defaultPluginDir(exe)
	}
	if cfg.dataDir == "" {
		cfg.dataDir = defaultDataDir(runtime.GOOS, os.Getenv)
	}
	log := newLogger(cfg, stderr)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var code int
	switch pos[0] {
	case "exec":
		code, err = runExec(ctx, cfg, log, pos[1:], stdout)
	case "plugins":
		code, err = runPlugins(ctx, cfg, log, pos[1:], stdout, stderr)
	case "describe":
		code, err = runDescribe(ctx, cfg, log, pos[1:], stdout, stderr)
	case "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		err = usagef("unknown command %q", pos[0])
	}
	if err != nil {
		return usageExit(stderr, err)
	}
	return code
}

func usageExit(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "yuzu-agent: %v\n\n%s", err, usage)
	return exitUsage
}

func newLogger(cfg config, stderr io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:              "yuzu-agent",
		Level:             hclog.LevelFromString(cfg.logLevel),
		Output:            stderr,
		JSONFormat:        cfg.logFormat == "json",
		IndependentLevels: true,
	})
}

// exitCode maps a command's return code onto a process exit status.
func exitCode(rc int) int {
	if rc < 0 || rc > 255 {
		return exitFail
	}
	return rc
}
