package cli

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/dispatch"
	"github.com/yuzugo/yuzu/agent/internal/output"
	"github.com/yuzugo/yuzu/agent/internal/plugincmd"
	"github.com/yuzugo/yuzu/agent/internal/view"
	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/agent/trust"
	"github.com/yuzugo/yuzu/sdk/definition"
	"github.com/yuzugo/yuzu/sdk/host"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// startWait bounds how long `plugins` and `describe` wait for plugins to start.
const startWait = plugincmd.StartWait

func runPlugins(ctx context.Context, cfg config, log hclog.Logger, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) > 0 {
		env := pluginEnv(cfg, log, stdout, stderr)
		switch args[0] {
		case "add":
			if len(args) < 2 {
				return 0, usagef("plugins add needs a FILE")
			}
			opts := plugincmd.AddOptions{Signature: cfg.signature, Force: cfg.force, AllowDowngrade: cfg.allowDowngrade, IfNewer: cfg.ifNewer}
			return plugincmd.Add(ctx, env, opts, args[1:]), nil
		case "remove":
			if len(args) != 2 {
				return 0, usagef("plugins remove needs exactly one NAME")
			}
			return plugincmd.Remove(ctx, env, args[1]), nil
		case "rollback":
			if len(args) != 2 {
				return 0, usagef("plugins rollback needs exactly one NAME")
			}
			return plugincmd.Rollback(ctx, env, args[1]), nil
		case "keys":
			switch {
			case len(args) == 3 && args[1] == "update":
				return plugincmd.UpdateKeys(env, args[2]), nil
			case len(args) > 1:
				return 0, usagef("plugins keys takes no argument, or update FILE")
			}
			return plugincmd.ListKeys(env)
		case "pin":
			if len(args) < 2 {
				return 0, usagef("plugins pin needs a FILE")
			}
			return plugincmd.Pin(ctx, env, args[1:]), nil
		}
		return 0, usagef("plugins: unknown subcommand %q", rows.Printable(args[0]))
	}
	sup, err := newSupervisor(cfg, log)
	if err != nil {
		fmt.Fprintln(stderr, "yuzu-agent:", rows.Printable(err.Error()))
		return exitFail, nil
	}
	defer sup.Close()
	ctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	sup.Start(ctx)
	return writePluginTable(stdout, sup.Status()), nil
}

// pluginEnv is what the plugin trust commands need of the agent's configuration.
func pluginEnv(cfg config, log hclog.Logger, stdout, stderr io.Writer) plugincmd.Env {
	return plugincmd.Env{
		PluginDir: cfg.pluginDir, DataDir: cfg.dataDir, StateDir: trustDir(cfg), PublishersDir: cfg.publishersDir,
		AgentVersion:      Version,
		SupervisorOptions: func() (supervisor.Options, error) { return supervisorOptions(cfg, log) },
		NewSupervisor:     func() (*supervisor.Supervisor, error) { return newSupervisor(cfg, log) },
		Stdout:            stdout, Stderr: stderr,
	}
}

// loadKeys reads the publishers' keys and the key-set updates accepted earlier.
func loadKeys(cfg config) (*trust.Keys, error) {
	return plugincmd.LoadKeys(cfg.publishersDir, trustDir(cfg))
}

// writePluginTable prints the plugins table of `plugins` and the shell's .plugins; the
// code is exitFail when a plugin is not running.
func writePluginTable(stdout io.Writer, statuses []supervisor.Status) int {
	if err := view.WritePlugins(stdout, statuses); err != nil {
		return exitFail
	}
	for _, st := range statuses {
		if st.State != supervisor.StateRunning {
			return exitFail
		}
	}
	return exitOK
}

func runDescribe(ctx context.Context, cfg config, log hclog.Logger, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) != 1 {
		return 0, usagef("describe needs exactly one PLUGIN")
	}
	sup, err := newSupervisor(cfg, log)
	if err != nil {
		fmt.Fprintln(stderr, "yuzu-agent:", rows.Printable(err.Error()))
		return exitFail, nil
	}
	defer sup.Close()
	ctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	m, err := sup.Describe(ctx, args[0])
	if err != nil {
		fmt.Fprintln(stderr, "yuzu-agent:", rows.Printable(err.Error()))
		return exitFail, nil
	}
	if cfg.definitions {
		return printDefinitions(stdout, stderr, m), nil
	}
	// Through a dispatcher, as every command the agent runs: admission and the audit
	// line stay in one place.
	d := dispatch.New(sup, dispatch.Options{Audit: log, AuditLevel: hclog.Debug})
	view.WriteManifest(stdout, m, hostMechanism(ctx, d, m))
	return exitOK, nil
}

// mechanismProbeTimeout bounds the action describe runs to name the mechanism (the
// firewall plugin's walk is bounded by 20 s).
const mechanismProbeTimeout = 30 * time.Second

// mechanismAction is the action describe runs to learn which mechanism the host
// actually uses, or "": the one the plugin declares for it (sdk.MechanismProbe), when
// it takes no required parameter. It answers `backend|NAME` rows naming what answered
// on this host (the firewall plugin's state: docs/firewall.md); the manifest's
// mechanisms are only what each system's leg tries first. An action the plugin did not
// declare for it is never run, whatever its name or rows.
func mechanismAction(m host.Manifest) string {
	for _, a := range m.Actions {
		if !a.MechanismProbe {
			continue
		}
		for i := range a.Params {
			if a.Params[i].Required {
				return ""
			}
		}
		return a.Name
	}
	return ""
}

// hostMechanism runs the mechanism action and names the backends it answered with,
// joined by " + " (nftables and the legacy iptables tables are read together); where
// the answer names none (Windows, whose one mechanism is its firewall policy), the
// declared mechanism of this system's leg; `unknown (why)` when the action failed.
// "" when the plugin has no such action.
func hostMechanism(ctx context.Context, d *dispatch.Dispatcher, m host.Manifest) string {
	action := mechanismAction(m)
	if action == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, mechanismProbeTimeout)
	defer cancel()
	var backends []string
	req := dispatch.Request{Request: supervisor.Request{Command: host.Command{ID: "describe-mechanism", Action: action}, Plugin: m.Name, Timeout: mechanismProbeTimeout}}
	_, err := d.Do(ctx, req,
		func(batch []string) error {
			for _, r := range batch {
				if f := rows.Split(r, 2); len(f) == 2 && f[0] == "backend" && !slices.Contains(backends, f[1]) {
					backends = append(backends, f[1])
				}
			}
			return nil
		})
	if err != nil {
		return "unknown (" + output.Cell(err.Error()) + ")"
	}
	if len(backends) == 0 {
		for _, a := range m.Actions {
			if a.Name == action {
				if leg := a.OS(runtime.GOOS); leg.Mechanism != "" {
					return output.Cell(leg.Mechanism) + " (declared; the answer names no backend)"
				}
			}
		}
		return "unknown (the answer names no backend)"
	}
	for i, b := range backends {
		backends[i] = output.Cell(b)
	}
	return strings.Join(backends, " + ")
}

// printDefinitions writes the definitions a plugin serves as one YAML stream, a
// starting file for the plugin's own definitions directory. The YAML library quotes
// every string that needs it, so plugin-supplied text cannot break the stream.
func printDefinitions(stdout, stderr io.Writer, m host.Manifest) int {
	defs, err := m.ServedDefinitions()
	if err == nil && len(defs) == 0 {
		err = fmt.Errorf("plugin %s ships no definitions and declares no vendor prefix to derive them with", m.Name)
	}
	var data []byte
	if err == nil {
		data, err = definition.Marshal(defs)
	}
	if err != nil {
		fmt.Fprintln(stderr, "yuzu-agent:", rows.PrintableLines(err.Error()))
		return exitFail
	}
	fmt.Fprintf(stdout, "# The InstructionDefinitions plugin %s %s serves (yuzu-agent describe %s --definitions).\n", output.Cell(m.Name), output.Cell(m.Version), output.Cell(m.Name))
	if _, err := stdout.Write(data); err != nil {
		return exitFail
	}
	return exitOK
}
