package cli

import (
	"context"
	"io"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/dispatch"
	"github.com/yuzugo/yuzu/agent/internal/output"
	"github.com/yuzugo/yuzu/agent/internal/shell"
	"github.com/yuzugo/yuzu/agent/internal/view"
	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/sdk/host"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// runShell is `yuzu-agent shell` (agent/internal/shell) on this configuration.
func runShell(cfg config, log hclog.Logger, args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if len(args) > 0 {
		return 0, usagef("shell takes no arguments, got %q", rows.Printable(args[0]))
	}
	rc := shell.Run(shell.Options{
		Version:   Version,
		Log:       log,
		NewLogger: func(w io.Writer) hclog.Logger { return newLogger(cfg, w) },
		Open: func(log hclog.Logger) (*supervisor.Supervisor, shell.Commands, error) {
			sup, err := newSupervisor(cfg, log)
			if err != nil {
				return nil, nil, err
			}
			d := dispatch.New(sup, dispatch.Options{Audit: log, AuditLevel: hclog.Debug}) // as exec's
			return sup, shellCommands{cfg: cfg, log: log, sup: sup, disp: d}, nil
		},
		DataDir:      cfg.dataDir,
		StartWait:    startWait,
		CatalogWatch: catalogWatch,
	}, stdin, stdout, stderr)
	return exitCode(rc), nil
}

// shellCommands are exec, describe and plugins on the shell's supervisor.
type shellCommands struct {
	cfg  config
	log  hclog.Logger
	sup  *supervisor.Supervisor
	disp *dispatch.Dispatcher
}

func (c shellCommands) Exec(ctx context.Context, words []string, format string, out, progress io.Writer, message func(error) string) (int, string, error) {
	t, err := parseTarget(words)
	if err != nil {
		return 0, "", err
	}
	cfg := c.cfg // a definition's ttl may change the timeout of this command only
	cfg.output = output.Format(format)
	return runCommand(ctx, cfg, c.sup, c.disp, t, output.New(cfg.output, out), progress, c.log, message), t.plugin, nil
}

func (c shellCommands) Describe(ctx context.Context, name string, out io.Writer) (host.Manifest, error) {
	m, err := c.sup.Describe(ctx, name)
	if err != nil {
		return m, err
	}
	view.WriteManifest(out, m, hostMechanism(ctx, c.disp, m))
	return m, nil
}

func (c shellCommands) Plugins(out io.Writer) int { return writePluginTable(out, c.sup.Status()) }

func (c shellCommands) Message(err error) string { return agentMessage(err) }
