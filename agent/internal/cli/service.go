package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/internal/agentconf"
	"github.com/yuzugo/yuzu/agent/internal/service"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// serviceTool runs one service manager command for `service`; a variable so that a
// test can see the commands without a service manager.
var serviceTool = service.RunTool

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
	u := service.Unit{Path: path, Systemd: runtime.GOOS == "linux", Tool: serviceTool}
	if args[0] == "install" {
		exe, err := os.Executable()
		if err != nil {
			return fail(err)
		}
		return service.ManageUnit(ctx, u, "install", service.Spec{Exe: exe, Config: serviceConfigPath(cfg)}, stdout, stderr), nil
	}
	return service.ManageUnit(ctx, u, args[0], service.Spec{}, stdout, stderr), nil
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
