package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/internal/identity"
	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/sdk/rows"
	"github.com/yuzugo/yuzu/sdk/safefile"
)

// `yuzu-agent config check` and the warnings `run` logs at start: what run would
// refuse, and what it goes ahead with that an operator should know (docs/operations.md,
// "Checking a configuration").

// settingsWarnings are what run goes ahead with but an operator should know: TLS off,
// secrets other local users can read, plugin sections that name no plugin.
func settingsWarnings(cfg config, rs runSettings) []string {
	var out []string
	if cfg.noTLS {
		out = append(out, "TLS is off (--no-tls): commands and answers travel in clear text; use it only with a test server")
	}
	if cfg.tokenOnCommandLine {
		out = append(out, "the enrollment token is on the command line (--enrollment-token), where every local user can read it (ps, /proc/PID/cmdline): give it with --enrollment-token-file or YUZU_ENROLLMENT_TOKEN")
	}
	if rs.tokenExposed != nil {
		out = append(out, fmt.Sprintf("the enrollment token file %s is %v: only the agent's user should read it (chmod 0600, or an ACL for SYSTEM and Administrators only)", cfg.enrollmentTokenFile, rs.tokenExposed))
	}
	if cfg.file != nil && cfg.file.readable != nil {
		var held []string
		for _, name := range sortedSecretSettings() {
			if strings.HasPrefix(cfg.file.sources[name], "file ") {
				held = append(held, name)
			}
		}
		if len(held) > 0 {
			out = append(out, fmt.Sprintf("the configuration file %s holds %s and is %v: only the agent's user should read it, or move the secret to its own file (--enrollment-token-file)", cfg.file.path, strings.Join(held, ", "), cfg.file.readable))
		}
	}
	if cfg.clientKey != "" {
		if exposed := fileExposed(cfg.clientKey); exposed != nil {
			out = append(out, fmt.Sprintf("the client key %s is %v: only the agent's user should read it (chmod 0600)", cfg.clientKey, exposed))
		}
	}
	if rs.identity != nil {
		if exposed := rs.identity.Exposed(); exposed != nil {
			out = append(out, fmt.Sprintf("the enrolled identity %s (the agent's key) is %v: only the agent's user should read it",
				filepath.Join(rs.identity.Dir(), identity.IdentityFile), exposed))
		}
		if leaf, ok, err := rs.identity.Current(); err == nil && ok {
			if p := leaf.Problem(time.Now()); p != "" {
				out = append(out, p+" ("+identity.Describe(leaf, time.Now())+")")
			}
		}
	}
	out = append(out, unknownPluginSections(cfg)...)
	return out
}

// sortedSecretSettings lists secretSettings in a stable order.
func sortedSecretSettings() []string {
	var names []string
	for name := range secretSettings {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// fileExposed opens path (no link followed) and says who besides the trusted accounts
// can read it; nil when no one can or it cannot be opened (run reports that itself).
func fileExposed(path string) error {
	f, fi, err := safefile.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	return safefile.Private(f, fi)
}

// unknownPluginSections names the configuration file's plugins.NAME sections whose
// NAME is no plugin in the catalog: a misspelt name would leave the plugin it meant
// running with settings it was never given (a plugin added later takes its section
// then, so this is a warning, not a refusal).
func unknownPluginSections(cfg config) []string {
	if cfg.file == nil || len(cfg.file.plugins) == 0 {
		return nil
	}
	known, err := supervisor.Survey(supervisor.Options{PluginDir: cfg.pluginDir})
	if err != nil {
		return nil // the plugin dir's own problem is reported where it is used
	}
	var installed []string
	for name := range known {
		installed = append(installed, name)
	}
	sort.Strings(installed)
	if len(installed) == 0 {
		installed = []string{"none"}
	}
	var out []string
	for _, name := range sortedLines(cfg.file.plugins) {
		if _, ok := known[name]; ok {
			continue
		}
		out = append(out, fmt.Sprintf("plugins.%s (%s:%d) names no installed plugin, so its settings apply to nothing (installed: %s)",
			name, cfg.file.path, cfg.file.plugins[name], strings.Join(installed, ", ")))
	}
	return out
}

// sortedLines is m's keys by their line.
func sortedLines(m map[string]int) []string {
	var names []string
	for name := range m {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		return m[names[i]] < m[names[j]] || m[names[i]] == m[names[j]] && names[i] < names[j]
	})
	return names
}

// settingsProblems are what run would refuse to start with, beyond the flag and file
// syntax parseArgs has checked already: run's own settings and TLS files, and the
// plugin dir and the publishers' keys.
func settingsProblems(cfg config, log hclog.Logger) (runSettings, []string) {
	var out []string
	rs, err := checkRun(cfg)
	if err != nil {
		out = append(out, blame(cfg, err).Error())
	}
	o, err := supervisorOptions(cfg, log)
	if err != nil {
		out = append(out, err.Error())
		return rs, out
	}
	survey, err := supervisor.Survey(o)
	if err != nil {
		out = append(out, err.Error())
		return rs, out
	}
	for _, name := range sortedErrKeys(survey) {
		if err := survey[name]; err != nil && !cfg.disabledPlugins()[name] {
			// A refused plugin does not stop run; it is said so at start and in
			// `plugins`. Listed here as a problem all the same: a check that passes
			// should mean every plugin runs.
			out = append(out, fmt.Sprintf("plugin %s would not run: %v", name, err))
		}
	}
	return rs, out
}

func sortedErrKeys(m map[string]error) []string {
	var names []string
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// runConfigCheck is `yuzu-agent config check [--strict]`: every problem run would
// refuse to start with and every warning it would log, one per line; exit 1 when
// there is a problem (or, with --strict, a warning), else 0.
func runConfigCheck(cfg config, log hclog.Logger, args []string, stdout io.Writer) (int, error) {
	if len(args) > 0 {
		return 0, usagef("config check takes no arguments, got %q", rows.Printable(args[0]))
	}
	if cfg.file == nil || cfg.file.path == "" {
		fmt.Fprintf(stdout, "configuration file: none (%s is absent)\n", rows.Printable(defaultConfigPath(runtime.GOOS, os.Getenv)))
	} else {
		fmt.Fprintf(stdout, "configuration file: %s\n", rows.Printable(cfg.file.path))
	}
	rs, problems := settingsProblems(cfg, log)
	warnings := settingsWarnings(cfg, rs)
	if rs.identity != nil {
		leaf, ok, err := rs.identity.Current()
		switch {
		case err != nil:
			problems = append(problems, err.Error())
		case ok:
			fmt.Fprintln(stdout, "certificate:", rows.Printable(identity.Describe(leaf, time.Now())))
		case rs.identity.Enrolling():
			fmt.Fprintln(stdout, "certificate: none yet; run enrolls for one")
		}
	}
	for _, p := range problems {
		fmt.Fprintln(stdout, "problem:", rows.Printable(p))
	}
	for _, w := range warnings {
		fmt.Fprintln(stdout, "warning:", rows.Printable(w))
	}
	tally := counted(len(problems), "problem") + ", " + counted(len(warnings), "warning")
	switch {
	case len(problems) > 0:
		fmt.Fprintln(stdout, "not ok:", tally)
		return exitFail, nil
	case cfg.strict && len(warnings) > 0:
		fmt.Fprintln(stdout, "not ok (--strict):", tally)
		return exitFail, nil
	}
	fmt.Fprintln(stdout, "ok:", tally)
	return exitOK, nil
}

// counted is "1 thing" or "N things".
func counted(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
