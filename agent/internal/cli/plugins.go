package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/dispatch"
	"github.com/yuzugo/yuzu/agent/internal/control"
	"github.com/yuzugo/yuzu/agent/internal/installer"
	"github.com/yuzugo/yuzu/agent/internal/limits"
	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/agent/trust"
	"github.com/yuzugo/yuzu/definitions"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/definition"
	"github.com/yuzugo/yuzu/sdk/host"
	"github.com/yuzugo/yuzu/sdk/rows"
	"github.com/yuzugo/yuzu/sdk/safefile"
)

// startWait bounds how long `plugins` and `describe` wait for plugins to start.
const startWait = 30 * time.Second

func runPlugins(ctx context.Context, cfg config, log hclog.Logger, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) > 0 {
		switch args[0] {
		case "add":
			if len(args) < 2 {
				return 0, usagef("plugins add needs a FILE")
			}
			return addPlugins(ctx, cfg, log, args[1:], stdout, stderr), nil
		case "remove":
			if len(args) != 2 {
				return 0, usagef("plugins remove needs exactly one NAME")
			}
			return removePlugin(ctx, cfg, args[1], stdout, stderr), nil
		case "rollback":
			if len(args) != 2 {
				return 0, usagef("plugins rollback needs exactly one NAME")
			}
			return rollbackPlugin(ctx, cfg, log, args[1], stdout, stderr), nil
		case "keys":
			return runKeys(cfg, args[1:], stdout, stderr)
		case "pin":
			if len(args) < 2 {
				return 0, usagef("plugins pin needs a FILE")
			}
			return pinPlugins(ctx, cfg, args[1:], stdout, stderr), nil
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

// writePluginTable prints the plugins table of `plugins` and the shell's .plugins; the
// code is exitFail when a plugin is not running.
func writePluginTable(stdout io.Writer, statuses []supervisor.Status) int {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tPROTOCOL\tTRUST\tSTATE\tRESTARTS\tLAST ERROR\tMEMORY PEAK/LIMIT\tTASKS PEAK/LIMIT\tCPU LIMIT\tACTIONS")
	code := exitOK
	for _, st := range statuses {
		if st.State != supervisor.StateRunning {
			code = exitFail
		}
		protocol := "-"
		if st.Protocol > 0 {
			protocol = strconv.Itoa(st.Protocol)
		}
		mem, tasks, cpu := boxCells(st)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", cell(st.Name), cell(versionCell(st)), protocol, cell(trustCell(st)),
			st.State, st.Restarts, cell(st.LastError), mem, tasks, cpu, cell(strings.Join(st.Actions, ",")))
	}
	if err := tw.Flush(); err != nil {
		return exitFail
	}
	return code
}

// versionCell is the version a plugin runs; while no child has said one, the
// catalog's.
func versionCell(st supervisor.Status) string {
	if st.Version != "" {
		return st.Version
	}
	v, _, _ := strings.Cut(st.Build, " (")
	if strings.HasPrefix(v, "sha256 ") {
		return ""
	}
	return v
}

// trustCell says who vouches for a plugin's build: "unsigned", or the publisher.
func trustCell(st supervisor.Status) string {
	switch st.Trust {
	case "":
		return "-" // a binary the catalog does not name
	case "unsigned":
		return "unsigned"
	}
	pub, _, _ := strings.Cut(strings.TrimPrefix(st.Trust, "signed by "), " ")
	return "signed:" + pub
}

// boxCells are a plugin's resource columns: peak use over limit ("-" for a peak the
// kernel does not keep), or "none" when its child runs without a box.
func boxCells(st supervisor.Status) (mem, tasks, cpu string) {
	if !st.Boxed {
		return "none", "none", "none"
	}
	peak := func(v int64, f func(int64) string) string {
		if !st.Usage.Known || v <= 0 {
			return "-"
		}
		return f(v)
	}
	// A zero limit is one the system could not enforce (limits.Limits).
	limit := func(v int64, f func(int64) string) string {
		if v <= 0 {
			return "none"
		}
		return f(v)
	}
	count := func(n int64) string { return strconv.FormatInt(n, 10) }
	mem = peak(st.Usage.MemoryPeak, limits.MiB) + "/" + limit(st.Limits.MemoryBytes, limits.MiB)
	tasks = peak(st.Usage.TasksPeak, count) + "/" + limit(st.Limits.Tasks, count)
	cpu = "none"
	if st.Limits.CPUs > 0 {
		cpu = strconv.FormatFloat(st.Limits.CPUs, 'f', -1, 64)
	}
	return mem, tasks, cpu
}

// cell makes plugin-supplied text safe for one table cell: printable, no tabs (which
// would shift the columns), "-" when empty.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	return strings.ReplaceAll(rows.Printable(s), "\t", " ")
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
	printManifest(stdout, m, hostMechanism(ctx, d, m))
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
		return "unknown (" + cell(err.Error()) + ")"
	}
	if len(backends) == 0 {
		for _, a := range m.Actions {
			if a.Name == action {
				if leg := a.OS(runtime.GOOS); leg.Mechanism != "" {
					return cell(leg.Mechanism) + " (declared; the answer names no backend)"
				}
			}
		}
		return "unknown (the answer names no backend)"
	}
	for i, b := range backends {
		backends[i] = cell(b)
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
	fmt.Fprintf(stdout, "# The InstructionDefinitions plugin %s %s serves (yuzu-agent describe %s --definitions).\n", cell(m.Name), cell(m.Version), cell(m.Name))
	if _, err := stdout.Write(data); err != nil {
		return exitFail
	}
	return exitOK
}

// printManifest writes a plugin's manifest for people: identity, then per action its
// support per OS, parameters with their rules, the rows it writes and its result
// columns, then the definitions it ships. mechanism, when not empty, is what the host
// actually uses (hostMechanism).
func printManifest(w io.Writer, m host.Manifest, mechanism string) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("name: %s\nversion: %s\ndescription: %s\nsdk_version: %s\nprotocol: %d\n",
		cell(m.Name), cell(m.Version), cell(m.Description), cell(m.SDKVersion), m.Protocol)
	if m.Vendor != "" {
		p("vendor: %s\n", cell(m.Vendor))
	}
	if mechanism != "" {
		p("mechanism: %s\n", mechanism)
	}
	p("actions:\n")
	for _, a := range m.Actions {
		p("  %s: %s\n", cell(a.Name), cell(a.Description))
		p("    support: linux=%s darwin=%s windows=%s\n", support(a.Linux), support(a.Darwin), support(a.Windows))
		if len(a.Params) == 0 {
			p("    parameters: none\n")
		} else {
			p("    parameters:\n")
			for i := range a.Params {
				p("      %s\n", paramLine(&a.Params[i]))
			}
		}
		for _, r := range a.Rows {
			p("    row: %s\n", cell(strings.Join(append([]string{r.Kind}, columnNames(r.Columns)...), "|")))
		}
		p("    columns: %s\n", cell(strings.Join(columnNames(a.Columns), ", ")))
	}
	if len(m.Definitions) > 0 || m.Vendor != "" {
		p("definitions:\n")
		defs, err := m.ServedDefinitions()
		if err != nil {
			p("  (do not parse: %s)\n", cell(err.Error()))
		}
		for _, d := range defs {
			p("  %s: %s/%s (%s, %s, ttl %ds, %s)\n", cell(d.ID), cell(d.Plugin), cell(d.Action), d.Type, strings.Join(d.Platforms, ","), d.TTLSeconds, d.Approval)
		}
	}
}

func support(s sdk.OSSupport) string {
	out := s.Level.String()
	if s.Mechanism != "" {
		out += "(" + cell(s.Mechanism) + ")"
	}
	return out
}

func columnNames(cols []sdk.Column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name
		if c.Type != sdk.TypeString {
			out[i] += ":" + string(c.Type)
		}
	}
	return out
}

// paramLine describes one declared parameter on one line, e.g.
// `key string required maxLength=64 pattern=^[a-z]+$ — Tag key`.
func paramLine(p *sdk.Parameter) string {
	parts := []string{cell(p.Name), string(p.Type)}
	if p.Required {
		parts = append(parts, "required")
	}
	if p.Default != nil {
		parts = append(parts, "default="+strconv.Quote(*p.Default))
	}
	if p.MinLength != nil {
		parts = append(parts, "minLength="+strconv.Itoa(*p.MinLength))
	}
	if p.MaxLength != nil {
		parts = append(parts, "maxLength="+strconv.Itoa(*p.MaxLength))
	}
	if p.Pattern != "" {
		parts = append(parts, "pattern="+cell(p.Pattern))
	}
	if p.Enum != nil {
		parts = append(parts, "enum="+cell(strings.Join(p.Enum, "|")))
	}
	if p.Minimum != nil {
		parts = append(parts, "minimum="+strconv.FormatInt(*p.Minimum, 10))
	}
	if p.Maximum != nil {
		parts = append(parts, "maximum="+strconv.FormatInt(*p.Maximum, 10))
	}
	if p.Clamped {
		parts = append(parts, "clamped")
	}
	line := strings.Join(parts, " ")
	if p.Description != "" {
		line += " — " + cell(p.Description)
	}
	return line
}

// addPlugins installs plugin builds (installer.Install: checked before any of their
// code runs, stored, started once, checked again, made current in the catalog) and
// tells a running agent, which starts each new build beside the running one and says
// how that went. Every file is tried; the code is exitFail when one was refused or
// rolled back.
func addPlugins(ctx context.Context, cfg config, log hclog.Logger, files []string, stdout, stderr io.Writer) int {
	fail := func(format string, args ...any) {
		fmt.Fprintln(stderr, "yuzu-agent: plugins add: "+rows.PrintableLines(fmt.Sprintf(format, args...)))
	}
	if cfg.signature != "" && len(files) != 1 {
		fail("--signature names the signature of one FILE; for several, put each beside its file as FILE.minisig")
		return exitFail
	}
	keys, err := loadKeys(cfg)
	if err != nil {
		fail("%v", err)
		return exitFail
	}
	if err := atomicfile.MkdirAll(cfg.pluginDir, 0o755); err != nil {
		fail("%v", err)
		return exitFail
	}
	ic := installerConfig(cfg, log, keys, func(ctx context.Context, name string) map[string][]definition.Definition {
		return otherDefinitions(ctx, cfg, log, name, stderr)
	})
	code := exitOK
	var changed []string
	for _, file := range files {
		offer, err := offerOf(cfg, file)
		if err != nil {
			fail("%v", err)
			code = exitFail
			continue
		}
		res, err := installer.Install(ctx, ic, offer)
		if err != nil {
			fail("%s: the plugin dir is unchanged: %v", file, err)
			code = exitFail
			continue
		}
		switch {
		case res.Skipped != "":
			fmt.Fprintf(stdout, "skipped %s: %s\n", rows.Printable(file), cell(res.Skipped))
		case res.Change.Kind == trust.KindSame:
			fmt.Fprintf(stdout, "%s\n", cell(res.Change.Describe()))
		default:
			defs, _ := res.Manifest.ServedDefinitions()
			fmt.Fprintf(stdout, "added %s, %s, %d actions, %d definitions\n", cell(res.Change.Describe()),
				cell(trustWord(res.Change.Entry)), len(res.Manifest.Actions), len(defs))
			changed = append(changed, res.Change.Entry.Name())
		}
	}
	if len(changed) > 0 && tellAgent(ctx, cfg, changed, stdout, stderr) != exitOK {
		code = exitFail
	}
	return code
}

// offerOf reads a file offered to plugins add, and its signature: --signature, else
// FILE.minisig when there is one.
func offerOf(cfg config, file string) (installer.Offer, error) {
	o := installer.Offer{FileName: filepath.Base(file), Source: "plugins add " + file,
		Options: trust.Options{Force: cfg.force, AllowDowngrade: cfg.allowDowngrade}, IfNewer: cfg.ifNewer}
	var err error
	if o.Bytes, err = trust.ReadSource(file); err != nil {
		return o, err
	}
	sigPath, explicit := cfg.signature, cfg.signature != ""
	if !explicit {
		sigPath = file + ".minisig"
	}
	o.Signature, err = safefile.ReadFile(sigPath, maxSignatureBytes)
	if err != nil && (explicit || !errors.Is(err, fs.ErrNotExist)) {
		return o, fmt.Errorf("signature: %w", err)
	}
	return o, nil
}

// maxSignatureBytes bounds a signature file: a minisign signature is about 300 bytes.
const maxSignatureBytes = 64 << 10

// trustWord says in a few words who vouches for an entry.
func trustWord(e *trust.Entry) string {
	if e.Publisher == "" {
		return "unsigned"
	}
	return "signed by " + e.Publisher + " (key " + strings.Join(e.SignedBy, ", ") + ")"
}

// loadKeys reads the publishers' keys and the key-set updates accepted earlier.
func loadKeys(cfg config) (*trust.Keys, error) {
	return trust.LoadKeys(cfg.publishersDir, filepath.Join(trustDir(cfg), "keysets"))
}

// installerConfig is how a build is tried and checked before it enters the catalog:
// one trial start with the agent's own settings, then its definitions against its
// declarations and against every other plugin's (others: by plugin name, and the
// agent's workflows).
func installerConfig(cfg config, log hclog.Logger, keys *trust.Keys, others func(ctx context.Context, name string) map[string][]definition.Definition) installer.Config {
	return installer.Config{
		PluginDir: cfg.pluginDir, StateDir: trustDir(cfg), Keys: keys,
		Trial: func(ctx context.Context, b supervisor.Binary) (host.Manifest, error) {
			o, err := supervisorOptions(cfg, log)
			if err != nil {
				return host.Manifest{}, err
			}
			return supervisor.Trial(ctx, o, b)
		},
		Check: func(ctx context.Context, m host.Manifest) []string {
			defs, problems := checkShipped(m)
			if len(problems) > 0 {
				return append([]string{"its definitions disagree with its declarations:"}, problems...)
			}
			if problems := shippingRules(m, defs, others(ctx, m.Name)); len(problems) > 0 {
				return append([]string{"its definitions cannot ship:"}, problems...)
			}
			return nil
		},
	}
}

// tellAgent has the agent running on this data dir read its catalog again, and says
// what it made of each changed plugin: running the new build, or rolled back. No
// agent answering is no failure: the change waits for its next start (or for any
// long-lived agent on this plugin dir, which looks at the catalog every few seconds).
func tellAgent(ctx context.Context, cfg config, changed []string, stdout, stderr io.Writer) int {
	path := control.Path(cfg.dataDir)
	r, err := control.Reload(ctx, path)
	if errors.Is(err, control.ErrNotRunning) {
		fmt.Fprintf(stdout, "no running agent answers at %s: the change takes effect when the plugins next start\n", rows.Printable(path))
		return exitOK
	}
	if err == nil && r.Error != "" {
		err = errors.New(r.Error)
	}
	if err != nil {
		fmt.Fprintln(stderr, "yuzu-agent: the running agent did not take the change: "+rows.Printable(err.Error()))
		return exitFail
	}
	code := exitOK
	for _, name := range changed {
		i := slices.IndexFunc(r.Plugins, func(st supervisor.Status) bool { return st.Name == name })
		if i < 0 {
			fmt.Fprintf(stdout, "running agent: %s is gone\n", cell(name))
			continue
		}
		st := r.Plugins[i]
		switch {
		case st.LastRollback != "" && strings.Contains(st.LastError, "rolled back"):
			fmt.Fprintf(stdout, "running agent: %s rolled back to %s: %s\n", cell(name), cell(st.Build), cell(st.LastRollback))
			code = exitFail
		case st.State == supervisor.StateRefused:
			fmt.Fprintf(stdout, "running agent: %s refused: %s\n", cell(name), cell(st.LastError))
			code = exitFail
		default:
			pid := ""
			if st.Pid > 0 {
				pid = fmt.Sprintf(", pid %d", st.Pid)
			}
			fmt.Fprintf(stdout, "running agent: %s %s%s (%s)\n", cell(name), cell(st.Build), pid, st.State)
		}
	}
	return code
}

// otherDefinitions returns the definitions every plugin but name serves (by plugin
// name) and the agent's workflows (under "workflows"), for shippingRules. Another
// plugin that cannot be asked is named on stderr and left out: it must not keep a
// working plugin from being added.
func otherDefinitions(ctx context.Context, cfg config, log hclog.Logger, name string, stderr io.Writer) map[string][]definition.Definition {
	others := map[string][]definition.Definition{}
	if wfs, err := definitions.Workflows(); err == nil {
		others[workflowsOwner] = wfs
	}
	sup, err := newSupervisor(cfg, log)
	if err != nil {
		return others
	}
	defer sup.Close()
	return definitionsOf(ctx, sup, name, others, stderr)
}

// definitionsOf adds to others what every plugin of sup but name serves.
func definitionsOf(ctx context.Context, sup *supervisor.Supervisor, name string, others map[string][]definition.Definition, stderr io.Writer) map[string][]definition.Definition {
	ctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	for _, n := range sup.Plugins() {
		if n == name {
			continue
		}
		defs, err := pluginDefinitions(ctx, sup, n)
		if err != nil {
			fmt.Fprintln(stderr, "yuzu-agent: plugins add: warning: definition ids not checked against plugin "+rows.Printable(n)+": "+rows.PrintableLines(err.Error()))
			continue
		}
		others[n] = defs
	}
	return others
}

// workflowsOwner names the agent's own workflow definitions among the owners of ids.
const workflowsOwner = "the agent's workflows"

// shippingRules lists what keeps a plugin's definitions from shipping: an id another
// plugin (or a workflow) already serves, naming both, and a minAgentVersion newer than
// this agent, naming both versions (docs/agent.md#adding-a-plugin).
func shippingRules(m host.Manifest, defs []definition.Definition, others map[string][]definition.Definition) []string {
	var problems []string
	owners := slices.Sorted(maps.Keys(others))
	for _, d := range defs {
		for _, o := range owners {
			if slices.ContainsFunc(others[o], func(od definition.Definition) bool { return od.ID == d.ID }) {
				problems = append(problems, fmt.Sprintf("definition %s of plugin %s: the id is already served by %s", d.ID, m.Name, pluginOwner(o)))
			}
		}
		if err := d.CheckAgentVersion(Version); err != nil {
			problems = append(problems, err.Error())
		}
	}
	return problems
}

func pluginOwner(o string) string {
	if o == workflowsOwner {
		return o
	}
	return "plugin " + o
}

// checkShipped parses a plugin's definitions and lists how they disagree with its
// declarations (no problems: the definitions are fine, possibly none).
func checkShipped(m host.Manifest) (defs []definition.Definition, problems []string) {
	defs, err := m.ServedDefinitions()
	if err != nil {
		return nil, []string{err.Error()}
	}
	if len(defs) == 0 {
		// A plugin that ships no definitions and declares no vendor to derive them
		// from is run by plugin and action only; there is nothing to agree with.
		return nil, nil
	}
	for _, d := range definition.CheckAgreement(m.Name, m.Actions, defs) {
		problems = append(problems, d.Error())
	}
	return defs, problems
}

// removePlugin stops trusting a plugin: its entry leaves the catalog and its builds
// the plugin dir; a running agent lets the plugin finish what it holds.
func removePlugin(ctx context.Context, cfg config, name string, stdout, stderr io.Writer) int {
	if !sdk.ValidName(name) {
		fmt.Fprintln(stderr, "yuzu-agent: plugins remove: "+rows.Printable(strconv.Quote(name))+" is not a plugin name")
		return exitFail
	}
	gone, err := installer.Remove(ctx, cfg.pluginDir, name)
	if gone == nil {
		fmt.Fprintln(stderr, "yuzu-agent: plugins remove: "+rows.Printable(err.Error()))
		return exitFail
	}
	fmt.Fprintf(stdout, "removed %s %s\n", cell(name), cell(gone.Label()))
	code := exitOK
	if err != nil {
		fmt.Fprintln(stderr, "yuzu-agent: plugins remove: "+rows.Printable(err.Error()))
		code = exitFail
	}
	if tellAgent(ctx, cfg, nil, stdout, stderr) != exitOK {
		code = exitFail
	}
	return code
}

// rollbackPlugin makes a plugin's previous build current again on the operator's word.
func rollbackPlugin(ctx context.Context, cfg config, log hclog.Logger, name string, stdout, stderr io.Writer) int {
	if !sdk.ValidName(name) {
		fmt.Fprintln(stderr, "yuzu-agent: plugins rollback: "+rows.Printable(strconv.Quote(name))+" is not a plugin name")
		return exitFail
	}
	back, from, err := installer.Rollback(ctx, installer.Config{PluginDir: cfg.pluginDir, StateDir: trustDir(cfg)}, name)
	if err != nil {
		fmt.Fprintln(stderr, "yuzu-agent: plugins rollback: "+rows.Printable(err.Error()))
		return exitFail
	}
	fmt.Fprintf(stdout, "rolled back %s %s -> %s; %s is not installed again unless forced\n", cell(name), cell(from.VersionOrUnknown()),
		cell(back.Label()), cell(from.Label()))
	return tellAgent(ctx, cfg, []string{name}, stdout, stderr)
}

// pinPlugins is `plugins pin FILE...`: builds already at the top of the plugin dir
// recorded by checksum, without a start (installer.Pin).
func pinPlugins(ctx context.Context, cfg config, files []string, stdout, stderr io.Writer) int {
	keys, err := loadKeys(cfg)
	if err == nil {
		var pinned []*trust.Entry
		if pinned, err = installer.Pin(ctx, installer.Config{PluginDir: cfg.pluginDir, Keys: keys}, files); err == nil {
			for _, e := range pinned {
				fmt.Fprintf(stdout, "pinned %s %s, %s\n", cell(e.Name()), cell(e.Label()), cell(trustWord(e)))
			}
			return exitOK
		}
	}
	fmt.Fprintln(stderr, "yuzu-agent: plugins pin: "+rows.Printable(err.Error()))
	return exitFail
}

// runKeys is `plugins keys`: the publishers this agent trusts, each key set with its
// serial, the plugins each may sign and the keys it revoked; and `plugins keys update
// FILE`: a signed key-set update (FILE.minisig beside it) taken into use.
func runKeys(cfg config, args []string, stdout, stderr io.Writer) (int, error) {
	keys, err := loadKeys(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "yuzu-agent: "+rows.Printable(err.Error()))
		return exitFail, nil
	}
	if len(args) == 2 && args[0] == "update" {
		doc, err := safefile.ReadFile(args[1], 64<<10)
		var sig []byte
		if err == nil {
			sig, err = safefile.ReadFile(args[1]+".minisig", 64<<10)
		}
		var res trust.AdvanceResult
		if err == nil {
			res, err = keys.Advance(doc, sig)
		}
		if err != nil {
			fmt.Fprintln(stderr, "yuzu-agent: plugins keys update: "+rows.Printable(err.Error()))
			return exitFail, nil
		}
		if !res.Applied {
			fmt.Fprintf(stdout, "publisher %s is at key set %d already (this update is %d)\n", res.Publisher, res.From, res.To)
			return exitOK, nil
		}
		fmt.Fprintf(stdout, "publisher %s: key set %d -> %d\n", res.Publisher, res.From, res.To)
		return exitOK, nil
	}
	if len(args) > 0 {
		return 0, usagef("plugins keys takes no argument, or update FILE")
	}
	for _, w := range keys.Warnings {
		fmt.Fprintln(stderr, "yuzu-agent: warning: "+rows.Printable(w))
	}
	if !keys.Configured() {
		fmt.Fprintf(stdout, "no publisher keys in %s: plugins are trusted by their SHA-256 alone (unsigned)\n", rows.Printable(keys.Dir))
		return exitOK, nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PUBLISHER\tKEY SET\tKEYS\tPLUGINS\tREVOKED")
	for _, name := range slices.Sorted(maps.Keys(keys.Publishers)) {
		p := keys.Publishers[name]
		ids := make([]string, len(p.Keys))
		for i, k := range p.Keys {
			ids[i] = trust.KeyID(k.ID())
		}
		var revoked []string
		for id := range p.Revoked {
			revoked = append(revoked, trust.KeyID(id))
		}
		slices.Sort(revoked)
		plugins := "*"
		if p.Plugins != nil {
			plugins = strings.Join(p.Plugins, " ")
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", name, p.Serial, strings.Join(ids, " "), cell(plugins), cell(strings.Join(revoked, " ")))
	}
	return exitOK, tw.Flush()
}
