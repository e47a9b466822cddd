package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/dispatch"
	"github.com/yuzugo/yuzu/agent/internal/identity"
	"github.com/yuzugo/yuzu/agent/internal/limits"
	"github.com/yuzugo/yuzu/agent/internal/output"
	"github.com/yuzugo/yuzu/agent/internal/plugincmd"
	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/definitions"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/definition"
	"github.com/yuzugo/yuzu/sdk/host"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// parseParams reads key=value arguments. A missing `=`, an empty key, a key given twice
// or text that is not valid UTF-8 (parameters travel as protobuf strings) is a usage
// error naming the argument.
func parseParams(args []string) (map[string]string, error) {
	params := make(map[string]string, len(args))
	for _, a := range args {
		if !utf8.ValidString(a) {
			return nil, usagef("parameter %s is not valid UTF-8", rows.Printable(a))
		}
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, usagef("parameter %q: want key=value", rows.Printable(a))
		}
		if _, dup := params[k]; dup {
			return nil, usagef("parameter %q given twice", rows.Printable(k))
		}
		params[k] = v
	}
	return params, nil
}

// target is what an exec runs.
type target struct {
	plugin, action string
	params         map[string]string
	// def is the definition the command runs through, if any.
	def *definition.Definition
	// rows are the kinds of rows the action declares, once known; the output names
	// their fields.
	rows []sdk.RowKind
}

// parseTarget turns exec's arguments into a target, without looking anything up yet.
// A first argument with a dot is a definition id (plugin names cannot contain one).
func parseTarget(args []string) (target, error) {
	if len(args) == 0 {
		return target{}, usagef("exec needs PLUGIN ACTION or DEFINITION-ID")
	}
	if !utf8.ValidString(args[0]) {
		return target{}, usagef("%s is not valid UTF-8", rows.Printable(args[0]))
	}
	if strings.Contains(args[0], ".") {
		params, err := parseParams(args[1:])
		return target{params: params, def: &definition.Definition{ID: args[0]}}, err
	}
	if len(args) < 2 {
		return target{}, usagef("exec %s: missing ACTION", args[0])
	}
	if !utf8.ValidString(args[1]) {
		return target{}, usagef("%s is not valid UTF-8", rows.Printable(args[1]))
	}
	params, err := parseParams(args[2:])
	return target{plugin: args[0], action: args[1], params: params}, err
}

// resolveDefinition finds the definition t names, among the workflows the agent ships
// and the definitions its plugins serve, checks that it agrees with the action it runs
// and that the parameters pass it, and fills in t's plugin and action. Its ttl becomes
// the deadline unless --timeout was given.
func resolveDefinition(ctx context.Context, cfg *config, sup *supervisor.Supervisor, t *target) error {
	id := t.def.ID
	def, workflow, err := findDefinition(ctx, sup, id)
	if err != nil {
		return err
	}
	if !def.SupportsPlatform(runtime.GOOS) {
		return fmt.Errorf("definition %s is not available on %s (platforms: %s)", def.ID, runtime.GOOS, strings.Join(def.Platforms, ", "))
	}
	if err := def.CheckAgentVersion(Version); err != nil {
		return err
	}
	// requiredPlugins, versions included, before anything runs: a definition written
	// for a later plugin must not run on an earlier one.
	if err := def.CheckPlugins(func(p string) (string, bool) {
		if !sup.Has(p) {
			return "", false
		}
		m, err := sup.Describe(ctx, p)
		if err != nil {
			return "unknown (" + err.Error() + ")", true
		}
		return m.Version, true
	}); err != nil {
		return err
	}
	m, err := sup.Describe(ctx, def.Plugin)
	if err != nil {
		return err
	}
	var problems []*definition.Disagreement
	if workflow {
		problems = definition.CheckWorkflow(def, m.Actions)
	} else {
		problems = definition.CheckDefinition(m.Name, m.Actions, def)
	}
	if len(problems) > 0 {
		return fmt.Errorf("definition %s disagrees with plugin %s %s: %v", def.ID, m.Name, m.Version, problems[0])
	}
	// The plugin's order and messages, so the refusal is the very row the plugin
	// itself would answer on `exec PLUGIN ACTION` or from the fleet server.
	if a, ok := m.Action(def.Action); ok {
		def = def.WithDeclaration(a)
		t.rows = a.Rows
	}
	if err := def.Validate(t.params); err != nil {
		return err
	}
	if !cfg.timeoutSet && def.TTL() > 0 {
		cfg.timeout = def.TTL()
	}
	t.plugin, t.action, t.def = def.Plugin, def.Action, &def
	return nil
}

// findDefinition looks id up: first among the workflows, then in the plugins' served
// definitions. Plugin definition ids conventionally name their plugin
// (device.tags.set, security.firewall.state), so a plugin named by a segment of the id
// is asked first and the others only when it does not serve it; that keeps
// `exec DEFINITION-ID` from starting every plugin.
func findDefinition(ctx context.Context, sup *supervisor.Supervisor, id string) (definition.Definition, bool, error) {
	wfs, err := definitions.Workflows()
	if err != nil {
		return definition.Definition{}, false, fmt.Errorf("workflow definitions: %w", err)
	}
	for _, d := range wfs {
		if d.ID == id {
			return d, true, nil
		}
	}
	names := sup.Plugins()
	var first, rest []string
	for _, n := range names {
		if containsSegment(id, n) {
			first = append(first, n)
		} else {
			rest = append(rest, n)
		}
	}
	var problems []string
	for _, n := range append(first, rest...) {
		defs, err := plugincmd.Served(ctx, sup, n)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, d := range defs {
			if d.ID == id {
				return d, false, nil
			}
		}
	}
	msg := "unknown definition: " + id
	if len(problems) > 0 {
		msg += " (not every plugin could be asked: " + strings.Join(problems, "; ") + ")"
	}
	return definition.Definition{}, false, errors.New(msg)
}

func containsSegment(id, name string) bool {
	for _, seg := range strings.Split(id, ".") {
		if seg == name {
			return true
		}
	}
	return false
}

// runExec runs one command through the dispatcher and the supervisor, exactly as a
// command from the fleet server would go, and prints it in the --output format.
func runExec(ctx context.Context, cfg config, log hclog.Logger, args []string, stdout, stderr io.Writer) (int, error) {
	out := output.New(cfg.output, stdout)
	t, err := parseTarget(args)
	if err != nil {
		return 0, err
	}
	sup, err := newSupervisor(cfg, log)
	if err != nil {
		return out.AgentError(err.Error()), nil
	}
	defer sup.Close()
	// The answer is on stdout for the operator to read: the audit line is debug here.
	d := dispatch.New(sup, dispatch.Options{Audit: log, AuditLevel: hclog.Debug})
	var progress io.Writer
	if output.IsTerminal(stderr) {
		progress = stderr
	}
	return runCommand(ctx, cfg, sup, d, t, out, progress, log, agentMessage), nil
}

// runCommand runs the parsed command t as exec and the shell do: a definition resolved
// first (its ttl is this command's timeout), the rows' fields declared for the formats
// that name them, progress on the terminal progress (nil: none), the answer in out. It
// returns the exit code; message words an agent-side failure.
func runCommand(ctx context.Context, cfg config, sup *supervisor.Supervisor, d *dispatch.Dispatcher, t target,
	out output.Writer, progress io.Writer, log hclog.Logger, message func(error) string) int {
	if t.def != nil {
		if err := resolveDefinition(ctx, &cfg, sup, &t); err != nil {
			return out.AgentError(message(err))
		}
	}
	req := dispatch.Request{Request: supervisor.Request{
		Plugin:  t.plugin,
		Command: host.Command{Action: t.action, Params: t.params},
		Timeout: cfg.timeout,
	}}
	if cfg.output != output.Capture {
		declareRows(ctx, sup, &req, &t, log)
		out.Declare(t.rows)
	}
	onRows := out.Rows
	if progress != nil {
		// Rows and progress may share one terminal: a row never lands after the
		// progress text.
		p := output.NewProgressLine(progress)
		req.OnProgress = p.Show
		onRows = func(batch []string) error {
			p.Clear()
			return out.Rows(batch)
		}
		defer p.Clear()
	}
	res, err := d.Do(ctx, req, onRows)
	if err != nil {
		return out.AgentError(message(err))
	}
	if err := out.Result(res); err != nil {
		log.Error("writing the result", "error", err)
		return exitFail
	}
	return exitCode(res.Code)
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
	return newSupervisorWith(cfg, log, nil)
}

// newSupervisorWith is newSupervisor with what one command adds to the options (run's
// idle stop), when more is nil.
func newSupervisorWith(cfg config, log hclog.Logger, more func(*supervisor.Options)) (*supervisor.Supervisor, error) {
	o, err := supervisorOptions(cfg, log)
	if err != nil {
		return nil, err
	}
	o.ReapOrphans = true
	if more != nil {
		more(&o)
	}
	return supervisor.New(o)
}

// supervisorOptions are the supervisor's settings from the agent's: where the plugins
// and their state are, who the agent is, the limits, the disabled plugins and the
// publishers' keys (a publisher file that cannot be read stops every command: the
// agent would otherwise run what it was told to refuse).
func supervisorOptions(cfg config, log hclog.Logger) (supervisor.Options, error) {
	id, err := agentID(cfg)
	if err != nil {
		return supervisor.Options{}, err
	}
	set, err := limits.Parse(cfg.limits) // checked by parseArgs
	if err != nil {
		return supervisor.Options{}, err
	}
	keys, err := loadKeys(cfg)
	if err != nil {
		return supervisor.Options{}, err
	}
	for _, w := range keys.Warnings {
		log.Warn("publisher keys", "problem", rows.Printable(w))
	}
	return supervisor.Options{
		PluginDir:    cfg.pluginDir,
		DataDir:      cfg.dataDir,
		AgentID:      id,
		AgentVersion: Version,
		LogLevel:     cfg.logLevel,
		Logger:       log,
		Limits:       set,
		Disabled:     cfg.disabledPlugins(),
		Keys:         keys,
		TrustDir:     trustDir(cfg),
	}, nil
}

// agentID is --agent-id, else the id `run` keeps in the data dir, else empty: exec
// itself never writes an id there.
func agentID(cfg config) (string, error) {
	if cfg.agentID != "" {
		return cfg.agentID, nil
	}
	return identity.ReadAgentID(cfg.dataDir)
}
