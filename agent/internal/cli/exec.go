package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/dispatch"
	"github.com/yuzugo/yuzu/agent/internal/capture"
	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/definitions"
)

// parseParams reads key=value arguments. A missing `=`, an empty key or a key given
// twice is a usage error naming the argument.
func parseParams(args []string) (map[string]string, error) {
	params := make(map[string]string, len(args))
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, usagef("parameter %q: want key=value", a)
		}
		if _, dup := params[k]; dup {
			return nil, usagef("parameter %q given twice", k)
		}
		params[k] = v
	}
	return params, nil
}

// target is what an exec runs.
type target struct {
	plugin, action string
	params         map[string]string
}

// resolve turns exec's arguments into a target. A first argument with a dot is a
// definition id (plugin names cannot contain one): its parameters are validated
// against the definition and its ttl becomes the deadline unless --timeout was given.
func resolve(cfg *config, args []string) (target, error) {
	if len(args) == 0 {
		return target{}, usagef("exec needs PLUGIN ACTION or DEFINITION-ID")
	}
	if !strings.Contains(args[0], ".") {
		if len(args) < 2 {
			return target{}, usagef("exec %s: missing ACTION", args[0])
		}
		params, err := parseParams(args[2:])
		if err != nil {
			return target{}, err
		}
		return target{plugin: args[0], action: args[1], params: params}, nil
	}
	params, err := parseParams(args[1:])
	if err != nil {
		return target{}, err
	}
	cat, err := definitions.Load()
	if err != nil {
		return target{}, fmt.Errorf("definitions: %w", err)
	}
	def, ok := cat.Lookup(args[0])
	if !ok {
		return target{}, fmt.Errorf("unknown definition: %s", args[0])
	}
	if !def.SupportsPlatform(runtime.GOOS) {
		return target{}, fmt.Errorf("definition %s is not available on %s (platforms: %s)", def.ID, runtime.GOOS, strings.Join(def.Platforms, ", "))
	}
	if err := def.Validate(params); err != nil {
		return target{}, fmt.Errorf("%s: %w", def.ID, err)
	}
	if !cfg.timeoutSet && def.TTL() > 0 {
		cfg.timeout = def.TTL()
	}
	return target{plugin: def.Plugin, action: def.Action, params: params}, nil
}

// runExec runs one command through the dispatcher and the supervisor, exactly as a
// command from the fleet server would go, and prints it in the capture format.
func runExec(ctx context.Context, cfg config, log hclog.Logger, args []string, stdout io.Writer) (int, error) {
	out := capture.New(stdout)
	t, err := resolve(&cfg, args)
	if err != nil {
		var ue *usageError
		if errors.As(err, &ue) {
			return 0, err
		}
		return out.AgentError(err.Error()), nil
	}
	sup, err := newSupervisor(cfg, log)
	if err != nil {
		return out.AgentError(err.Error()), nil
	}
	defer sup.Close()
	d := dispatch.New(sup, dispatch.Options{})
	res, err := d.Do(ctx, supervisor.Request{
		Plugin:  t.plugin,
		Action:  t.action,
		Params:  t.params,
		Timeout: cfg.timeout,
	}, out.Rows)
	if err != nil {
		return out.AgentError(agentMessage(err)), nil
	}
	if err := out.Result(res); err != nil {
		log.Error("writing the result", "error", err)
		return exitFail, nil
	}
	return exitCode(res.Code), nil
}

// agentMessage words an agent-side failure for its error row.
func agentMessage(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "command cancelled: the agent was interrupted"
	case errors.Is(err, context.DeadlineExceeded):
		return "command cancelled: deadline exceeded"
	}
	return err.Error()
}

func newSupervisor(cfg config, log hclog.Logger) (*supervisor.Supervisor, error) {
	return supervisor.New(supervisor.Options{
		PluginDir:    cfg.pluginDir,
		DataDir:      cfg.dataDir,
		AgentID:      agentID(cfg),
		AgentVersion: Version,
		LogLevel:     cfg.logLevel,
		Logger:       log,
	})
}

// agentID is --agent-id, else the id `run` keeps in the data dir, else empty: exec
// itself never writes into the data dir.
func agentID(cfg config) string {
	if cfg.agentID != "" {
		return cfg.agentID
	}
	if b, err := os.ReadFile(filepath.Join(cfg.dataDir, "agent_id")); err == nil {
		return strings.TrimSpace(string(b))
	}
	return ""
}
