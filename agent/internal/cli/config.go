package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/internal/agentconf"
	"github.com/yuzugo/yuzu/agent/internal/diagnostics"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// The configuration file: every flag but --config may be set there by its own name;
// precedence is flag > environment > file > default (docs/operations.md,
// "Configuration file").

// fileSettings is what config keeps of the configuration file.
type fileSettings struct {
	path     string            // empty when no file was read
	sources  map[string]string // setting name: where its value came from
	disabled map[string]bool   // plugins the file turns off
	plugins  map[string]int    // plugins the file has a section for: the section's line
	readable error             // who besides the trusted accounts can read the file
}

// configEnv names the configuration file when --config does not.
const configEnv = "YUZU_CONFIG"

// defaultConfigPath is where the file is looked for when neither --config nor
// YUZU_CONFIG names one. A variable so that the package's tests never read the
// machine's own file.
var defaultConfigPath = agentconf.DefaultPath

// commandOnly are flags that are no setting: a file cannot hold them and `config
// show` does not list them.
var commandOnly = map[string]bool{"config": true, "out": true, "signature": true}

// fileKeys are the settings a configuration file may hold: every value flag and
// switch but commandOnly.
func fileKeys() map[string]agentconf.Kind {
	keys := map[string]agentconf.Kind{}
	for name := range valueFlags {
		if !commandOnly[name] {
			keys[name] = agentconf.Text
		}
	}
	for name := range boolFlags {
		keys[name] = agentconf.Switch
	}
	return keys
}

// loadConfigFile reads the configuration file: the one --config or YUZU_CONFIG
// names, which must exist, else the default one, which may be absent (nil, nil).
func loadConfigFile(given map[string]string, getenv func(string) string) (*agentconf.File, error) {
	path, explicit := given["config"]
	if !explicit {
		if path = getenv(configEnv); path != "" {
			explicit = true
		}
	}
	if explicit && path == "" {
		return nil, usagef("--config needs a file, not an empty value")
	}
	if !explicit {
		path = defaultConfigPath(runtime.GOOS, getenv)
	}
	f, err := agentconf.Load(path, fileKeys())
	if err != nil {
		if !explicit && agentconf.IsNotExist(err) {
			return nil, nil
		}
		return nil, usagef("configuration file: %s", rows.Printable(err.Error()))
	}
	// Per-plugin limits join the file's plugin-limits, and per-plugin idle stops its
	// idle-stop: one setting each, so that a flag or the environment replaces all of it.
	if pl := f.PluginNames(); len(pl) > 0 {
		joinPerPlugin(f, "plugin-limits", pl, func(p agentconf.Plugin) (string, int) { return p.Limits, p.LimitsLine })
		joinPerPlugin(f, "idle-stop", pl, func(p agentconf.Plugin) (string, int) {
			if p.IdleStopLine == 0 {
				return "", 0
			}
			return p.IdleStop.String(), p.IdleStopLine
		})
	}
	return f, nil
}

// joinPerPlugin appends each plugin's entry ("NAME:VALUE") to the file's setting of
// that name, joined with ";" after the setting's own value: the setting's line is its
// own when the file sets it, else the first plugin entry's.
func joinPerPlugin(f *agentconf.File, setting string, names []string, entry func(agentconf.Plugin) (string, int)) {
	var entries []string
	line := 0
	if v, ok := f.Settings[setting]; ok {
		entries, line = append(entries, v.Text), v.Line
	}
	for _, name := range names {
		v, l := entry(f.Plugins[name])
		if v == "" {
			continue
		}
		entries = append(entries, name+":"+v)
		if line == 0 {
			line = l
		}
	}
	if len(entries) > 0 {
		f.Settings[setting] = agentconf.Value{Text: strings.Join(entries, ";"), Line: line}
	}
}

// layered returns a getenv that falls back, for a flag's variable, on the file's
// value of that flag: the environment beats the file, and the flag parsing that reads
// variables reads the file through it.
func layered(getenv func(string) string, f *agentconf.File) func(string) string {
	if f == nil {
		return getenv
	}
	flagOf := map[string]string{}
	for name, env := range valueFlags {
		if env != "" {
			flagOf[env] = name
		}
	}
	for name, env := range boolFlags {
		flagOf[env] = name
	}
	return func(env string) string {
		if v := getenv(env); v != "" {
			return v
		}
		if name, ok := flagOf[env]; ok {
			return f.Settings[name].Text
		}
		return ""
	}
}

// Sources of a setting, as `config show` prints them.
const (
	sourceFlag    = "flag"
	sourceDefault = "default"
)

// settingSources says where each setting came from: "flag", "env NAME",
// "file PATH:LINE" or "default".
func settingSources(vals map[string]string, bools map[string]bool, getenv func(string) string, f *agentconf.File) map[string]string {
	src := map[string]string{}
	one := func(name, env string, given bool) {
		switch {
		case given:
			src[name] = sourceFlag
		case getenv(env) != "":
			src[name] = "env " + env
		case f != nil && f.Settings[name].Line > 0:
			src[name] = "file " + f.Line(f.Settings[name].Line)
		default:
			src[name] = sourceDefault
		}
	}
	for name, env := range valueFlags {
		_, given := vals[name]
		if commandOnly[name] && name != "config" {
			continue
		}
		one(name, env, given)
	}
	for name, env := range boolFlags {
		_, given := bools[name]
		one(name, env, given)
	}
	return src
}

// disabledPlugins are the plugins the file sets `enabled: false`.
func disabledPlugins(f *agentconf.File) map[string]bool {
	if f == nil {
		return nil
	}
	off := map[string]bool{}
	for name, p := range f.Plugins {
		if p.Enabled != nil && !*p.Enabled {
			off[name] = true
		}
	}
	return off
}

// flagMention finds the flags an error message names.
var flagMention = regexp.MustCompile(`--([a-z][a-z0-9-]*)`)

// blame adds, to an error about a setting that came from the configuration file or
// the environment, where it came from: the message names the flag, which the
// operator may never have typed.
func blame(cfg config, err error) error {
	var ue *usageError
	if err == nil || cfg.file == nil || !errors.As(err, &ue) {
		return err
	}
	for _, m := range flagMention.FindAllStringSubmatch(ue.msg, -1) {
		if s := cfg.file.sources[m[1]]; s != "" && s != sourceFlag && s != sourceDefault {
			return usagef("%s (set by %s)", ue.msg, s)
		}
	}
	return err
}

// secretSettings are never printed: `config show` and diagnostics say only that they
// are set.
var secretSettings = map[string]bool{"enrollment-token": true}

// redacted is what a secret setting prints as.
const redacted = diagnostics.Redacted

// shownDefaults are the defaults `config show` prints for settings left empty.
var shownDefaults = map[string]string{
	"timeout":          defaultTimeout.String(),
	"server":           defaultServer,
	"heartbeat":        defaultHeartbeat.String(),
	"plugin-limits":    "*:memory_mib=512,cpus=1,tasks=256",
	"idle-stop":        defaultIdleStop.String(),
	"spool-answer-mib": "64",
	"spool-total-mib":  "512",
	"metrics-listen":   "(off)",
	"no-tls":           "false",
	"tls-system-roots": "false",
}

// configRow is one setting for `config show` and diagnostics.
type configRow struct{ name, value, source string }

// configRows lists every setting with its value (secrets redacted) and source.
func configRows(cfg config) []configRow {
	values := map[string]string{
		"plugin-dir": cfg.pluginDir, "data-dir": cfg.dataDir, "agent-id": cfg.agentID,
		"log-level": cfg.logLevel, "log-format": cfg.logFormat, "plugin-limits": cfg.limits,
		"server": cfg.server, "ca-cert": cfg.caCert, "client-cert": cfg.clientCert,
		"client-key": cfg.clientKey, "enrollment-token": cfg.enrollmentToken,
		"enrollment-token-file": cfg.enrollmentTokenFile,
		"heartbeat":             cfg.heartbeat, "metrics-listen": cfg.metricsListen,
		"spool-answer-mib": cfg.spoolAnswer, "spool-total-mib": cfg.spoolTotal,
		"no-tls": fmt.Sprint(cfg.noTLS), "tls-system-roots": fmt.Sprint(cfg.tlsSystemRoots),
		"timeout": cfg.timeout.String(), "idle-stop": cfg.idleStop,
	}
	for name, v := range logValues(cfg) {
		values[name] = v
	}
	var out []configRow
	names := make([]string, 0, len(cfg.file.sources))
	for name := range cfg.file.sources {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		src := cfg.file.sources[name]
		v, known := values[name]
		if !known {
			v = "(not shown)"
		}
		if name == "config" {
			v = cfg.file.path
		}
		if v == "" && src == sourceDefault {
			v = shownDefaults[name]
		}
		if secretSettings[name] && v != "" {
			v = redacted
		}
		out = append(out, configRow{name, v, src})
	}
	for _, name := range sortedKeys(cfg.file.disabled) {
		out = append(out, configRow{"plugins." + name + ".enabled", "false", "file " + cfg.file.path})
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// writeConfigRows prints settings as aligned columns, every field escaped.
func writeConfigRows(w io.Writer, rs []configRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SETTING\tVALUE\tSOURCE")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.name, rows.Printable(r.value), rows.Printable(r.source))
	}
	return tw.Flush()
}

// runConfig is `yuzu-agent config show` and `config check` (check.go).
func runConfig(cfg config, log hclog.Logger, args []string, stdout io.Writer) (int, error) {
	if cfg.file == nil {
		cfg.file = &fileSettings{}
	}
	if len(args) >= 1 && args[0] == "check" {
		return runConfigCheck(cfg, log, args[1:], stdout)
	}
	if len(args) != 1 || args[0] != "show" {
		return 0, usagef("config takes show or check")
	}
	if cfg.file.path == "" {
		fmt.Fprintf(stdout, "configuration file: none (%s is absent)\n", rows.Printable(defaultConfigPath(runtime.GOOS, os.Getenv)))
	} else {
		fmt.Fprintf(stdout, "configuration file: %s\n", rows.Printable(cfg.file.path))
	}
	if err := writeConfigRows(stdout, configRows(cfg)); err != nil {
		return exitFail, nil
	}
	// A value run would refuse is said here too, so that show never looks like a
	// clean bill; config check looks further (files, plugins, secrets).
	if _, err := checkRun(cfg); err != nil {
		fmt.Fprintln(stdout, "problem:", rows.Printable(blame(cfg, err).Error()))
		fmt.Fprintln(stdout, "run would refuse to start; yuzu-agent config check lists every problem")
		return exitFail, nil
	}
	return exitOK, nil
}

// disabledPlugins are the plugins the configuration file turns off.
func (cfg config) disabledPlugins() map[string]bool {
	if cfg.file == nil {
		return nil
	}
	return cfg.file.disabled
}
