package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/internal/agentconf"
	"github.com/yuzugo/yuzu/agent/internal/service"
	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/rows"
	"github.com/yuzugo/yuzu/sdk/subprocess"
)

// serviceTool is one service manager command `service` runs; a variable so that a
// test can see the commands without a service manager. Its output is returned for the
// caller to print, and is not repeated in the error.
var serviceTool = func(ctx context.Context, argv ...string) (string, error) {
	res, err := subprocess.Run(ctx, subprocess.Spec{Argv: argv, Timeout: time.Minute, MergeStderr: true})
	if err != nil {
		return "", err
	}
	out := rows.PrintableLines(strings.TrimSpace(string(res.Output)))
	if !res.Complete() || res.ExitCode != 0 {
		return out, fmt.Errorf("%s: %s (exit %d)", argv[0], res.Reason, res.ExitCode)
	}
	return out, nil
}

// serviceDefinitionPath is where install writes the definition; a variable for tests.
var serviceDefinitionPath = map[string]string{"linux": service.SystemdUnitPath, "darwin": service.LaunchdPath}

// runService is `yuzu-agent service install|uninstall|status` (docs/operations.md,
// "Running as a service"). install first checks the configuration the service will
// read as `config check` does, and installs nothing the service could not start with.
func runService(ctx context.Context, cfg config, log hclog.Logger, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) != 1 || (args[0] != "install" && args[0] != "uninstall" && args[0] != "status") {
		return 0, usagef("service takes one of install, uninstall, status")
	}
	fail := func(err error) (int, error) {
		fmt.Fprintln(stderr, "yuzu-agent: service:", rows.PrintableLines(err.Error()))
		return exitFail, nil
	}
	if args[0] == "install" {
		if !serviceConfigStarts(serviceConfigPath(cfg), log, stdout, stderr) {
			return exitFail, nil
		}
	}
	if runtime.GOOS == "windows" {
		exe, err := os.Executable()
		if err != nil {
			return fail(err)
		}
		m, err := service.ConnectSCM()
		if err != nil {
			return fail(fmt.Errorf("the service control manager: %w", err))
		}
		defer m.Close()
		return service.Manage(ctx, m, args[0], exe, serviceConfigPath(cfg), stdout, stderr), nil
	}
	path, ok := serviceDefinitionPath[runtime.GOOS]
	if !ok {
		fmt.Fprintf(stderr, "yuzu-agent: service: not available on %s (systemd, launchd and the Windows service control manager are; docs/operations.md)\n", runtime.GOOS)
		return exitFail, nil
	}
	systemd := runtime.GOOS == "linux"
	// steps runs the service manager's commands in order, printing what they say; the
	// first failure ends it.
	steps := func(argvs ...[]string) error {
		for _, argv := range argvs {
			out, err := serviceTool(ctx, argv...)
			if out != "" {
				fmt.Fprintln(stdout, out)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	switch args[0] {
	case "install":
		exe, err := os.Executable()
		if err != nil {
			return fail(err)
		}
		spec := service.Spec{Exe: exe, Config: serviceConfigPath(cfg)}
		var text string
		if systemd {
			text, err = service.SystemdUnit(spec)
		} else {
			text, err = service.LaunchdPlist(spec)
		}
		if err != nil {
			return fail(err)
		}
		before, beforeErr := os.ReadFile(path) // what to put back if the manager fails
		if err := writeServiceFile(path, []byte(text)); err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "wrote %s\n", rows.Printable(path))
		if systemd {
			err = steps([]string{"/usr/bin/systemctl", "daemon-reload"}, []string{"/usr/bin/systemctl", "enable", "--now", service.Name + ".service"})
		} else {
			err = steps([]string{"/bin/launchctl", "bootstrap", "system", path})
		}
		if err != nil {
			// Leave the machine as it was: the definition that was there, or none.
			var undo error
			if beforeErr == nil {
				undo = writeServiceFile(path, before)
			} else if errors.Is(beforeErr, fs.ErrNotExist) {
				undo = os.Remove(path)
			}
			switch {
			case undo != nil:
				fmt.Fprintf(stderr, "yuzu-agent: service: %s could not be put back: %s\n", rows.Printable(path), rows.Printable(undo.Error()))
			case beforeErr == nil:
				fmt.Fprintf(stdout, "put the earlier %s back\n", rows.Printable(path))
			default:
				fmt.Fprintf(stdout, "removed %s again\n", rows.Printable(path))
			}
			if systemd && errors.Is(err, fs.ErrNotExist) {
				err = fmt.Errorf("%w: is systemd this machine's service manager? (docs/operations.md, \"Running as a service\")", err)
			} else if systemd {
				_ = steps([]string{"/usr/bin/systemctl", "daemon-reload"})
			}
			return fail(err)
		}
	case "uninstall":
		var err error
		if systemd {
			err = steps([]string{"/usr/bin/systemctl", "disable", "--now", service.Name + ".service"})
		} else {
			err = steps([]string{"/bin/launchctl", "bootout", "system/" + service.LaunchdLabel})
		}
		// No service manager at all runs nothing the definition could start: it
		// goes. Any other failure keeps it, so that a service still running keeps
		// its definition until it is stopped.
		noManager := errors.Is(err, fs.ErrNotExist)
		if err != nil && !noManager {
			return fail(fmt.Errorf("%w; %s is kept until the service is stopped", err, path))
		}
		if noManager {
			fmt.Fprintf(stderr, "yuzu-agent: service: no service manager to stop the service (%s)\n", rows.Printable(err.Error()))
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fail(err)
		}
		fmt.Fprintf(stdout, "removed %s\n", rows.Printable(path))
		if systemd && !noManager {
			if err := steps([]string{"/usr/bin/systemctl", "daemon-reload"}); err != nil {
				return fail(err)
			}
		}
	case "status":
		var err error
		if systemd {
			err = steps([]string{"/usr/bin/systemctl", "status", "--no-pager", service.Name + ".service"})
		} else {
			err = steps([]string{"/bin/launchctl", "print", "system/" + service.LaunchdLabel})
		}
		if err != nil {
			return fail(err)
		}
	}
	return exitOK, nil
}

// writeServiceFile writes a service definition atomically; a directory that could not
// be synced afterwards is no failure (the file is whole either way).
func writeServiceFile(path string, b []byte) error {
	err := atomicfile.WriteMode(path, b, 0o644)
	var syncErr *atomicfile.DirSyncError
	if errors.As(err, &syncErr) {
		return nil
	}
	return err
}

// serviceConfigStarts checks the configuration file a service would run with, as the
// service would read it (that file and the defaults: a service has none of this
// shell's YUZU_ variables), the way `config check` does. Warnings are printed and
// install goes on; a problem stops it before anything is installed.
func serviceConfigStarts(path string, log hclog.Logger, stdout, stderr io.Writer) bool {
	serviceEnv := func(k string) string {
		if strings.HasPrefix(k, "YUZU_") {
			return ""
		}
		return os.Getenv(k)
	}
	svc, _, err := parseArgs([]string{"--config", path, "run"}, serviceEnv)
	var problems, warnings []string
	if err != nil {
		problems = []string{blame(svc, err).Error()}
	} else {
		var rs runSettings
		rs, problems = settingsProblems(svc, log)
		warnings = settingsWarnings(svc, rs)
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "yuzu-agent: service: warning:", rows.Printable(w))
	}
	if len(problems) == 0 {
		return true
	}
	fmt.Fprintf(stderr, "yuzu-agent: service: not installed: the service would not start with %s:\n", rows.Printable(path))
	for _, p := range problems {
		fmt.Fprintln(stderr, "  problem:", rows.Printable(p))
	}
	fmt.Fprintf(stderr, "fix it and try again (yuzu-agent --config %s config check)\n", rows.Printable(path))
	return false
}

// serviceConfigPath is the configuration file a service reads: the one this command
// read (--config, YUZU_CONFIG), else the system's default path, which need not exist
// yet.
func serviceConfigPath(cfg config) string {
	if cfg.file != nil && cfg.file.path != "" {
		return cfg.file.path
	}
	return agentconf.DefaultPath(runtime.GOOS, os.Getenv)
}
