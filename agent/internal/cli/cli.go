// Package cli is the yuzu-agent command line.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/internal/agentconf"
	"github.com/yuzugo/yuzu/agent/internal/limits"
	"github.com/yuzugo/yuzu/agent/internal/output"
	"github.com/yuzugo/yuzu/agent/internal/service"
	"github.com/yuzugo/yuzu/agent/internal/stacks"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// Version is the agent's version; Commit is set at build time with -ldflags. The
// filesystem definitions it ships name minAgentVersion 0.4.0 (the version that
// brought their actions); this agent serves all of them, so it is at least that.
var (
	Version = "0.4.0"
	Commit  = "unknown"
)

const defaultTimeout = 600 * time.Second

const usage = `usage: yuzu-agent [flags] <command> [arguments]

commands:
  exec PLUGIN ACTION [key=value ...]   run one action; parameters go to the plugin as they are
  exec DEFINITION-ID [key=value ...]   run a definition (e.g. device.tags.set); parameters are
                                       validated against it first
  plugins                              list plugins: name, version, trust, state, restarts, last
                                       error, memory and task peaks over their limits, CPU limit
  plugins add [--force] [--allow-downgrade] [--if-newer] [--signature SIG] FILE...
                                       install plugin builds: checked (system, signature where
                                       publisher keys are configured), stored, started once, then
                                       current in the plugin catalog; says what changed (procs
                                       1.0.0 -> 2.0.0); a running agent takes it at once and rolls
                                       a build back that fails; --force: the same version as other
                                       bytes or a build rolled back before; --allow-downgrade: an
                                       older version; --if-newer: skip unless newer
  plugins pin FILE...                  record builds already at the top of the plugin dir by
                                       checksum, without starting them (build systems, packages)
  plugins remove NAME                  stop trusting a plugin: its entry and builds go
  plugins rollback NAME                make a plugin's previous build current again
  plugins keys [update FILE]           the publishers' key sets; take a signed key-set update
  describe PLUGIN                      print a plugin's actions, parameters, rows, definitions
  describe PLUGIN --definitions        print the definitions it serves as YAML (a starting file)
  run                                  connect to the fleet server and run its commands until
                                       SIGINT or SIGTERM (docs/fleet.md)
  shell                                type commands (exec's arguments, one a line) to one
                                       long-lived agent, with history and Tab completion;
                                       reads plain lines from a pipe (docs/agent.md)
  config show                          print every setting, its value and its source
  config check [--strict]              what run would refuse to start with (exit 1) and the
                                       warnings it would log; --strict: warnings fail too
  status                               ask the running agent (run) for its link, queue and plugins
  diagnostics [--out FILE]             write a tar.gz for support (docs/operations.md)
  service install|uninstall|status     the systemd unit, launchd daemon or Windows service
                                       that runs run
  update guard TREE-DIR                run by the service manager before each start: keep
                                       or roll back a new version on trial (docs/fleet.md)
  update self-check                    what a staged version runs before the agent switches
                                       to it: the configuration, plugins and catalog load
  update watch TREE-DIR                Windows: the watchdog a switching agent starts, which
                                       restarts the service and decides the new version's trial
  version                              print the version

flags (before or after the command; environment variable in brackets):
  --plugin-dir DIR    plugin binaries and their catalog, catalog.json [YUZU_PLUGIN_DIR]
                      (default: plugins/ beside the agent, else ../plugins)
  --publishers-dir DIR  publishers' keys, NAME.pub each [YUZU_PUBLISHERS_DIR] (default:
                      publishers/ beside the default configuration file; none there:
                      plugins are trusted by their SHA-256 alone)
  --data-dir DIR      state directory, e.g. tags.json [YUZU_DATA_DIR]
  --timeout DURATION  command deadline, e.g. 30s or 30 (seconds) [YUZU_TIMEOUT] (default 600s,
                      or the definition's ttl for exec DEFINITION-ID)
  --agent-id ID       agent id handed to plugins [YUZU_AGENT_ID]
  --log-level LEVEL   trace, debug, info, warn or error [YUZU_LOG_LEVEL] (default info)
  --log-format FMT    text or json [YUZU_LOG_FORMAT] (default text)
  --plugin-limits SPEC  resource limits of each plugin's child and all it starts
                      [YUZU_PLUGIN_LIMITS]: "NAME:memory_mib=N,cpus=X,tasks=N;..."
                      with NAME a plugin or * for all (default *:memory_mib=512,cpus=1,
                      tasks=256; docs/agent.md "Resource limits")
  --output FORMAT     exec's output: capture, json, jsonl or table [YUZU_OUTPUT]
                      (default capture; docs/agent.md "Output formats")
  --config FILE       configuration file [YUZU_CONFIG] (default /etc/yuzu/agent.yaml;
                      every flag below is a setting there; docs/operations.md)
  --log-file PATH     run logs to PATH, rotated by size [YUZU_LOG_FILE] (default stderr);
                      --log-max-mib N (64) and --log-max-files N (5) [YUZU_LOG_MAX_MIB,
                      YUZU_LOG_MAX_FILES]
  --version           print the version

run flags:
  --server HOST:PORT        fleet server [YUZU_SERVER] (default localhost:50051)
  --ca-cert FILE            PEM CA that signs the server's certificate [YUZU_CA_CERT]
  --tls-system-roots        trust the system store when no --ca-cert is given
                            [YUZU_TLS_SYSTEM_ROOTS=1]
  --client-cert FILE        PEM client certificate for mutual TLS [YUZU_CLIENT_CERT]
  --client-key FILE         its PEM key [YUZU_CLIENT_KEY]
  --no-tls                  plaintext, for a test server only [YUZU_NO_TLS=1]
  --enrollment-token-file FILE
                            the enrollment token, sent with every registration, read
                            from FILE [YUZU_ENROLLMENT_TOKEN_FILE]; --enrollment-token
                            TOKEN [YUZU_ENROLLMENT_TOKEN] gives it inline (on the command
                            line every local user can read it: the agent warns)
  --heartbeat DURATION      heartbeat period, e.g. 30s or 30 [YUZU_HEARTBEAT] (default 30s)
  --metrics-listen ADDR     serve Prometheus metrics on ADDR/metrics [YUZU_METRICS_LISTEN]
                            (default off)
  --spool-answer-mib N      rows of one answer kept on disk until the server has them, so
                            a broken connection loses none [YUZU_SPOOL_ANSWER_MIB]
                            (default 64; 0 keeps none)
  --spool-total-mib N       the same for all answers together [YUZU_SPOOL_TOTAL_MIB]
                            (default 512; 0 keeps none)
  --update-check-interval D how often to ask the fleet server for a new agent version
                            [YUZU_UPDATE_CHECK_INTERVAL] (default 6h, a tenth either way
                            at random; 0 never)
  --update-splay D          after a reconnect, the longest random wait before that
                            check [YUZU_UPDATE_SPLAY] (default 10m)
  --idle-stop SPEC          stop a plugin's child after this long with no command; it
                            starts again on the next [YUZU_IDLE_STOP]: "DURATION" for
                            all, or "NAME:DURATION;..." (* for all), 0 never (default 5m;
                            docs/agent.md "Lazy start and idle stop")
  TLS is on by default and fails closed: without --ca-cert or --tls-system-roots the
  agent refuses to start.

exec prints the rows, then "[result_status] STATUS / COMPLETENESS", then "[rc] N" when the
return code is not 0, and exits with that code. Logs go to stderr.
`

// Exit codes that are not a command's own.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
	// exitUpdated is run's exit after switching to a new version of itself: any
	// non-zero code makes a service manager start it again (systemd's Restart=,
	// the Windows service's failure actions); 75 is EX_TEMPFAIL, "try again".
	exitUpdated = 75
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
	limits     string // --plugin-limits, checked by parseArgs
	output     output.Format
	outputFlag bool // --output was given, not only YUZU_OUTPUT
	version    bool
	help       bool
	// definitions is describe's --definitions: print the definitions as YAML.
	definitions bool
	// plugins add's switches and --signature FILE.
	force, allowDowngrade, ifNewer bool
	// strict is config check's --strict: warnings fail the check too.
	strict    bool
	signature string
	// publishersDir holds the publishers' keys (docs/agent.md "Plugin catalog and
	// signatures"): none there, no signature is asked for.
	publishersDir string

	// The configuration file (config.go): its path, empty when none was read; where
	// each setting came from; the plugins it disables. A pointer keeps config
	// comparable.
	file *fileSettings
	// Log file settings (logfile.go); empty: logs go to stderr.
	logFile     string
	logMaxMiB   string
	logMaxFiles string
	// out is diagnostics' --out FILE.
	out string

	// run's flags, as given; runFleet checks them.
	server          string
	caCert          string
	clientCert      string
	clientKey       string
	enrollmentToken string
	// tokenOnCommandLine: --enrollment-token was given as a flag, where every local
	// user can read it (ps, /proc/PID/cmdline).
	tokenOnCommandLine  bool
	enrollmentTokenFile string
	heartbeat           string
	metricsListen       string
	spoolAnswer         string
	spoolTotal          string
	idleStop            string // checked by parseArgs (parseIdleStop)
	updateInterval      string
	updateSplay         string
	noTLS               bool
	tlsSystemRoots      bool
}

// valueFlags are the flags that take a value, with their environment variables.
var valueFlags = map[string]string{
	"plugin-dir":     "YUZU_PLUGIN_DIR",
	"data-dir":       "YUZU_DATA_DIR",
	"timeout":        "YUZU_TIMEOUT",
	"agent-id":       "YUZU_AGENT_ID",
	"log-level":      "YUZU_LOG_LEVEL",
	"log-format":     "YUZU_LOG_FORMAT",
	"plugin-limits":  "YUZU_PLUGIN_LIMITS",
	"output":         "YUZU_OUTPUT",
	"config":         configEnv,
	"log-file":       "YUZU_LOG_FILE",
	"log-max-mib":    "YUZU_LOG_MAX_MIB",
	"log-max-files":  "YUZU_LOG_MAX_FILES",
	"out":            "", // diagnostics' --out: the command line only
	"signature":      "", // plugins add's --signature: the command line only
	"publishers-dir": "YUZU_PUBLISHERS_DIR",

	"server":                "YUZU_SERVER",
	"ca-cert":               "YUZU_CA_CERT",
	"client-cert":           "YUZU_CLIENT_CERT",
	"client-key":            "YUZU_CLIENT_KEY",
	"enrollment-token":      "YUZU_ENROLLMENT_TOKEN",
	"enrollment-token-file": "YUZU_ENROLLMENT_TOKEN_FILE",
	"heartbeat":             "YUZU_HEARTBEAT",
	"metrics-listen":        "YUZU_METRICS_LISTEN",
	"spool-answer-mib":      "YUZU_SPOOL_ANSWER_MIB",
	"spool-total-mib":       "YUZU_SPOOL_TOTAL_MIB",
	"idle-stop":             "YUZU_IDLE_STOP",
	"update-check-interval": "YUZU_UPDATE_CHECK_INTERVAL",
	"update-splay":          "YUZU_UPDATE_SPLAY",
}

// parseArgs separates global flags (accepted anywhere before `--`) from positional
// arguments and applies environment defaults. Flags are spelled --name or --name=value;
// a single-dash or triple-dash spelling, a flag given twice and any value that is not
// valid UTF-8 are usage errors, so that a typo never silently means something else.
func parseArgs(args []string, getenv func(string) string) (config, []string, error) {
	vals := map[string]string{}
	bools := map[string]bool{}
	var cfg config
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !utf8.ValidString(a) {
			return cfg, nil, usagef("argument %d is not valid UTF-8: %s", i+1, rows.Printable(a))
		}
		if a == "--" {
			for j, rest := range args[i+1:] {
				if !utf8.ValidString(rest) {
					return cfg, nil, usagef("argument %d is not valid UTF-8: %s", i+j+2, rows.Printable(rest))
				}
			}
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		if a == "-h" {
			cfg.help = true
			continue
		}
		if !strings.HasPrefix(a, "--") || strings.HasPrefix(a, "---") {
			return cfg, nil, usagef("flag %s: flags are spelled --name or --name=value", rows.Printable(a))
		}
		name, val, hasVal := strings.Cut(a[2:], "=")
		switch name {
		case "version":
			cfg.version = true
			continue
		case "help":
			cfg.help = true
			continue
		case "definitions":
			cfg.definitions = true
			continue
		case "strict":
			// config check's switch: the command line only.
			if hasVal {
				return cfg, nil, usagef("flag --%s takes no value", name)
			}
			cfg.strict = true
			continue
		case "force", "allow-downgrade", "if-newer":
			// plugins add's switches: the command line only, never a setting.
			if hasVal {
				return cfg, nil, usagef("flag --%s takes no value", name)
			}
			switch name {
			case "force":
				cfg.force = true
			case "allow-downgrade":
				cfg.allowDowngrade = true
			case "if-newer":
				cfg.ifNewer = true
			}
			continue
		}
		if _, ok := boolFlags[name]; ok {
			if _, dup := bools[name]; dup {
				return cfg, nil, usagef("flag --%s given twice", name)
			}
			on := true
			if hasVal {
				if on, ok = parseBool(val); !ok {
					return cfg, nil, usagef("flag --%s=%s: want true or false", name, rows.Printable(val))
				}
			}
			bools[name] = on
			continue
		}
		if _, ok := valueFlags[name]; !ok {
			return cfg, nil, usagef("unknown flag %s", rows.Printable(a))
		}
		if _, dup := vals[name]; dup {
			return cfg, nil, usagef("flag --%s given twice", name)
		}
		if !hasVal {
			if i+1 >= len(args) {
				return cfg, nil, usagef("flag --%s needs a value", name)
			}
			i++
			val = args[i]
			if !utf8.ValidString(val) {
				return cfg, nil, usagef("flag --%s: value is not valid UTF-8: %s", name, rows.Printable(val))
			}
		}
		vals[name] = val
	}
	file, err := loadConfigFile(vals, getenv)
	if err != nil {
		return cfg, nil, err
	}
	cfg.file = &fileSettings{sources: settingSources(vals, bools, getenv, file), disabled: disabledPlugins(file)}
	if file != nil {
		cfg.file.path, cfg.file.readable = file.Path, file.Readable
		cfg.file.plugins = map[string]int{}
		for name, p := range file.Plugins {
			cfg.file.plugins[name] = p.Line
		}
	}
	getenv = layered(getenv, file)
	get := func(name string) (string, bool, error) {
		if v, ok := vals[name]; ok {
			return v, true, nil
		}
		v := getenv(valueFlags[name])
		if !utf8.ValidString(v) {
			return "", false, usagef("%s is not valid UTF-8: %s", valueFlags[name], rows.Printable(v))
		}
		return v, v != "", nil
	}
	var problems []error
	str := func(name string) string {
		v, _, err := get(name)
		if err != nil {
			problems = append(problems, err)
		}
		return v
	}
	cfg.pluginDir = str("plugin-dir")
	cfg.dataDir = str("data-dir")
	cfg.agentID = str("agent-id")
	cfg.logLevel = str("log-level")
	cfg.logFormat = str("log-format")
	cfg.limits = str("plugin-limits")
	cfg.logFile = str("log-file")
	cfg.logMaxMiB = str("log-max-mib")
	cfg.logMaxFiles = str("log-max-files")
	cfg.out = vals["out"]
	cfg.signature = vals["signature"]
	cfg.publishersDir = str("publishers-dir")
	if _, err := limits.Parse(cfg.limits); err != nil {
		problems = append(problems, usagef("--plugin-limits: %s", rows.Printable(err.Error())))
	}
	if cfg.output, err = output.Parse(str("output")); err != nil {
		problems = append(problems, usagef("--output: %v", err))
	}
	_, cfg.outputFlag = vals["output"]
	cfg.server = str("server")
	cfg.caCert = str("ca-cert")
	cfg.clientCert = str("client-cert")
	cfg.clientKey = str("client-key")
	cfg.enrollmentToken = str("enrollment-token")
	_, cfg.tokenOnCommandLine = vals["enrollment-token"]
	cfg.enrollmentTokenFile = str("enrollment-token-file")
	cfg.heartbeat = str("heartbeat")
	cfg.metricsListen = str("metrics-listen")
	cfg.spoolAnswer = str("spool-answer-mib")
	cfg.spoolTotal = str("spool-total-mib")
	cfg.idleStop = str("idle-stop")
	cfg.updateInterval = str("update-check-interval")
	cfg.updateSplay = str("update-splay")
	if _, err := parseIdleStop(cfg.idleStop); err != nil {
		problems = append(problems, err)
	}
	if cfg.noTLS, err = boolFlag(bools, "no-tls", getenv); err != nil {
		problems = append(problems, err)
	}
	if cfg.tlsSystemRoots, err = boolFlag(bools, "tls-system-roots", getenv); err != nil {
		problems = append(problems, err)
	}
	if len(problems) > 0 {
		return cfg, nil, problems[0]
	}
	for _, name := range []string{"plugin-dir", "data-dir", "publishers-dir"} {
		if v, given := vals[name]; given && v == "" {
			return cfg, nil, usagef("--%s needs a directory, not an empty value", name)
		}
	}
	cfg.timeout = defaultTimeout
	if v, ok, _ := get("timeout"); ok {
		d, err := parseTimeout(v)
		if err != nil {
			return cfg, nil, usagef("--timeout %q: %v", rows.Printable(v), err)
		}
		cfg.timeout, cfg.timeoutSet = d, true
	}
	if cfg.logLevel == "" {
		cfg.logLevel = "info"
	}
	switch cfg.logLevel {
	case "trace", "debug", "info", "warn", "error":
	default:
		return cfg, nil, usagef("--log-level %q: want trace, debug, info, warn or error", rows.Printable(cfg.logLevel))
	}
	if cfg.logFormat == "" {
		cfg.logFormat = "text"
	}
	if cfg.logFormat != "text" && cfg.logFormat != "json" {
		return cfg, nil, usagef("--log-format %q: want text or json", rows.Printable(cfg.logFormat))
	}
	return cfg, pos, nil
}

// maxTimeout bounds --timeout. A deadline is computed as now + timeout, and far larger
// values overflow time arithmetic (a deadline in the past: the command would time out
// at once); a week is longer than any command should run.
const maxTimeout = 7 * 24 * time.Hour

// durationSyntax matches what time.ParseDuration would accept but for its range. It is
// compiled on first use, only for a value time.ParseDuration refused, so that no
// command pays for it at start-up.
var durationSyntax = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[+]?([0-9]+(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$`)
})

// parseTimeout takes a Go duration ("90s", "2m") or a number of seconds, positive and at
// most maxTimeout.
func parseTimeout(v string) (time.Duration, error) {
	var d time.Duration
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(n) || n <= 0 {
			return 0, errors.New("must be positive")
		}
		if n > maxTimeout.Seconds() {
			return 0, fmt.Errorf("%s seconds is longer than the %s maximum", v, maxTimeout)
		}
		d = time.Duration(n * float64(time.Second))
	} else if d, err = time.ParseDuration(v); err != nil {
		if durationSyntax().MatchString(v) {
			// Well formed, yet refused: only overflow does that.
			return 0, fmt.Errorf("%s is longer than the %s maximum", v, maxTimeout)
		}
		return 0, errors.New("want a duration like 30s or a number of seconds")
	}
	switch {
	case d <= 0:
		return 0, errors.New("must be positive")
	case d > maxTimeout:
		return 0, fmt.Errorf("%s is longer than the %s maximum", v, maxTimeout)
	}
	return d, nil
}

// Main runs the command line and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if !service.UnderSCM() {
		return cliMain(args, stdout, stderr)
	}
	// Started by the Windows service control manager: nobody reads stderr, so what
	// would go there (a bad configuration file, a usage error) goes to the service's
	// default log file; and the SCM must hear from the process, or it waits for it to
	// start and reports a timeout instead of its exit code.
	stderr, closeErr := serviceStderr()
	defer closeErr()
	code := cliMain(args, stdout, stderr)
	if !service.Served() {
		if _, err := service.RunAsService(func(string, ...any) {}, func(context.Context) int { return code }, closeErr); err != nil {
			fmt.Fprintln(stderr, "yuzu-agent: as a service:", rows.Printable(err.Error()))
		}
	}
	return code
}

// serviceStderr is where a service's stderr goes: appended to its default log file
// (with the checks of --log-file), else nowhere. The file is opened at the first
// write, which only a failure makes: a running agent logs through its own logger.
func serviceStderr() (io.Writer, func()) {
	w := &lazyLog{path: service.WindowsLogFile(agentconf.SystemDir(runtime.GOOS, os.Getenv))}
	return w, w.close
}

type lazyLog struct {
	path    string
	mu      sync.Mutex
	opened  bool
	w       io.Writer
	closeFn func()
}

func (l *lazyLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.opened {
		l.opened = true
		w, closeFn, err := openLogFile(config{logFile: l.path}, io.Discard)
		if err == nil {
			l.w, l.closeFn = w, closeFn
		}
	}
	if l.w == nil {
		return len(p), nil
	}
	return l.w.Write(p)
}

func (l *lazyLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closeFn != nil {
		l.closeFn()
		l.closeFn, l.w = nil, nil
	}
}

func cliMain(args []string, stdout, stderr io.Writer) int {
	cfg, pos, err := parseArgs(args, os.Getenv)
	if err != nil {
		return usageExit(stderr, blame(cfg, err))
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
	system := cfg.dataDir == "" && runsAsSystem()
	if cfg.dataDir == "" {
		cfg.dataDir = agentconf.DataDir(runtime.GOOS, os.Getenv, system)
	}
	if cfg.publishersDir == "" {
		cfg.publishersDir = defaultPublishersDir(runtime.GOOS, os.Getenv)
	}
	// Started by the Windows service control manager: stderr goes nowhere, so the
	// log goes to the machine's log file unless the configuration names one.
	asService := pos[0] == "run" && service.UnderSCM()
	if asService && cfg.logFile == "" {
		cfg.logFile = service.WindowsLogFile(agentconf.SystemDir(runtime.GOOS, os.Getenv))
	}
	logOut := stderr
	closeLogNow := func() {}
	if pos[0] == "run" {
		out, closeLog, err := openLogFile(cfg, stderr)
		var ue *usageError
		if errors.As(err, &ue) {
			return usageExit(stderr, blame(cfg, err))
		}
		if err != nil {
			fmt.Fprintln(stderr, "yuzu-agent:", rows.Printable(err.Error()))
			return exitFail
		}
		var once sync.Once
		closeLogNow = func() { once.Do(closeLog) }
		defer closeLogNow()
		logOut = out
	}
	log := newLogger(cfg, logOut)
	if system {
		noteUserDataDir(log, runtime.GOOS, os.Getenv, cfg.dataDir)
	}

	// The shell owns its signals: SIGINT cancels the command it runs, not the shell.
	ctx, stop := context.Background(), func() {}
	if pos[0] != "shell" && !asService {
		ctx, stop = interruptible(log)
	}
	defer stop()
	defer stacks.Watch(log)()

	if cfg.definitions && pos[0] != "describe" {
		return usageExit(stderr, usagef("--definitions belongs to describe"))
	}
	// YUZU_OUTPUT may be exported for a whole session; only the flag is a mistake
	// on a command that prints no rows.
	if cfg.outputFlag && pos[0] != "exec" {
		return usageExit(stderr, usagef("--output belongs to exec"))
	}
	if cfg.strict && (pos[0] != "config" || len(pos) < 2 || pos[1] != "check") {
		return usageExit(stderr, usagef("--strict belongs to config check"))
	}
	if (cfg.force || cfg.allowDowngrade || cfg.ifNewer || cfg.signature != "") && (pos[0] != "plugins" || len(pos) < 2 || pos[1] != "add") {
		return usageExit(stderr, usagef("--force, --allow-downgrade, --if-newer and --signature belong to plugins add"))
	}
	var code int
	switch pos[0] {
	case "exec":
		code, err = runExec(ctx, cfg, log, pos[1:], stdout, stderr)
	case "plugins":
		code, err = runPlugins(ctx, cfg, log, pos[1:], stdout, stderr)
	case "describe":
		code, err = runDescribe(ctx, cfg, log, pos[1:], stdout, stderr)
	case "run":
		if !asService {
			code, err = runFleet(ctx, cfg, log, pos[1:], stderr)
			break
		}
		// The SCM's Stop and Shutdown take the place of SIGTERM.
		code, err = service.RunAsService(log.Info, func(ctx context.Context) int {
			code, err := runFleet(ctx, cfg, log, pos[1:], stderr)
			if err != nil {
				// A usage error has no terminal to go to: the log says it.
				log.Error("cannot run", "error", rows.Printable(err.Error()))
				return exitUsage
			}
			return code
		}, func() {
			stop()
			closeLogNow()
		})
		if err != nil {
			fmt.Fprintln(stderr, "yuzu-agent: as a service:", rows.Printable(err.Error()))
			return exitFail
		}
	case "shell":
		code, err = runShell(cfg, log, pos[1:], os.Stdin, stdout, stderr)
	case "config":
		code, err = runConfig(cfg, log, pos[1:], stdout)
	case "status":
		code, err = runStatus(ctx, cfg, pos[1:], stdout, stderr)
	case "diagnostics":
		code, err = runDiagnostics(ctx, cfg, pos[1:], stdout, stderr)
	case "service":
		code, err = runService(ctx, cfg, log, pos[1:], stdout, stderr)
	case "update":
		code, err = runUpdate(cfg, log, pos[1:], stdout)
	case "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		err = usagef("unknown command %q", pos[0])
	}
	if err != nil {
		return usageExit(stderr, blame(cfg, err))
	}
	return code
}

// interruptible returns a context that SIGINT or SIGTERM cancels: the command in flight
// then ends gracefully (cancelled, plugins stopped). A second signal ends the agent at
// once with status 130, whatever it is doing.
func interruptible(log hclog.Logger) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			log.Info("stopping: signal received; a second one stops at once", "signal", s.String())
			cancel()
		case <-done:
			return
		}
		select {
		case s := <-sigs:
			log.Warn("stopping at once: second signal", "signal", s.String())
			os.Exit(130)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// usageExit answers a usage error with the one line that says what is wrong and a
// hint, not the whole help, which would push the line off a small terminal.
func usageExit(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "yuzu-agent: %v\n%s", err, usageHint)
	return exitUsage
}

// usageHint ends every usage error.
const usageHint = "run 'yuzu-agent help' for the commands and flags\n"

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
