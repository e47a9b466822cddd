package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/yuzugo/yuzu/agent/internal/agentconf"
	"github.com/yuzugo/yuzu/agent/internal/service"
	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/rows"
	"github.com/yuzugo/yuzu/sdk/subprocess"
)

// serviceTool is one service manager command `service` runs; a variable so that a
// test can see the commands without a service manager.
var serviceTool = func(ctx context.Context, argv ...string) (string, error) {
	res, err := subprocess.Run(ctx, subprocess.Spec{Argv: argv, Timeout: time.Minute, MergeStderr: true})
	if err != nil {
		return "", err
	}
	out := printableLines(strings.TrimSpace(string(res.Output)))
	if !res.Complete() || res.ExitCode != 0 {
		return out, fmt.Errorf("%s: %s (exit %d): %s", argv[0], res.Reason, res.ExitCode, out)
	}
	return out, nil
}

// serviceDefinitionPath is where install writes the definition; a variable for tests.
var serviceDefinitionPath = map[string]string{"linux": service.SystemdUnitPath, "darwin": service.LaunchdPath}

// runService is `yuzu-agent service install|uninstall|status` (docs/operations.md,
// "Running as a service").
func runService(ctx context.Context, cfg config, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) != 1 || (args[0] != "install" && args[0] != "uninstall" && args[0] != "status") {
		return 0, usagef("service takes one of install, uninstall, status")
	}
	fail := func(err error) (int, error) {
		fmt.Fprintln(stderr, "yuzu-agent: service:", rows.Printable(err.Error()))
		return exitFail, nil
	}
	if runtime.GOOS == "windows" {
		exe, err := os.Executable()
		if err != nil {
			return fail(err)
		}
		m, err := connectSCM()
		if err != nil {
			return fail(fmt.Errorf("the service control manager: %w", err))
		}
		defer m.Close()
		return windowsService(ctx, m, args[0], exe, serviceConfigPath(cfg), stdout, stderr), nil
	}
	path, ok := serviceDefinitionPath[runtime.GOOS]
	if !ok {
		fmt.Fprintf(stderr, "yuzu-agent: service: not available on %s (systemd, launchd and the Windows service control manager are; docs/operations.md)\n", runtime.GOOS)
		return exitFail, nil
	}
	systemd := runtime.GOOS == "linux"
	var steps [][]string
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
		if err := atomicfile.WriteMode(path, []byte(text), 0o644); err != nil {
			var syncErr *atomicfile.DirSyncError
			if !errors.As(err, &syncErr) {
				return fail(err)
			}
		}
		fmt.Fprintf(stdout, "wrote %s\n", rows.Printable(path))
		if systemd {
			steps = [][]string{{"/usr/bin/systemctl", "daemon-reload"}, {"/usr/bin/systemctl", "enable", "--now", service.Name + ".service"}}
		} else {
			steps = [][]string{{"/bin/launchctl", "bootstrap", "system", path}}
		}
	case "uninstall":
		if systemd {
			steps = [][]string{{"/usr/bin/systemctl", "disable", "--now", service.Name + ".service"}}
		} else {
			steps = [][]string{{"/bin/launchctl", "bootout", "system/" + service.LaunchdLabel}}
		}
	case "status":
		if systemd {
			steps = [][]string{{"/usr/bin/systemctl", "status", "--no-pager", service.Name + ".service"}}
		} else {
			steps = [][]string{{"/bin/launchctl", "print", "system/" + service.LaunchdLabel}}
		}
	}
	for _, argv := range steps {
		out, err := serviceTool(ctx, argv...)
		if out != "" {
			fmt.Fprintln(stdout, out)
		}
		if err != nil {
			return fail(err)
		}
	}
	if args[0] == "uninstall" {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fail(err)
		}
		fmt.Fprintf(stdout, "removed %s\n", rows.Printable(path))
		if systemd {
			if _, err := serviceTool(ctx, "/usr/bin/systemctl", "daemon-reload"); err != nil {
				return fail(err)
			}
		}
	}
	return exitOK, nil
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
