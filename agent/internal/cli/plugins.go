package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/dispatch"
	"github.com/yuzugo/yuzu/agent/internal/limits"
	"github.com/yuzugo/yuzu/agent/internal/manifest"
	"github.com/yuzugo/yuzu/agent/supervisor"
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
			if len(args) != 2 {
				return 0, usagef("plugins add needs exactly one FILE")
			}
			return addPlugin(ctx, cfg, log, args[1], stdout, stderr), nil
		case "remove":
			if len(args) != 2 {
				return 0, usagef("plugins remove needs exactly one NAME")
			}
			return removePlugin(cfg, args[1], stdout, stderr), nil
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
	fmt.Fprintln(tw, "NAME\tVERSION\tPROTOCOL\tSTATE\tRESTARTS\tLAST ERROR\tMEMORY PEAK/LIMIT\tTASKS PEAK/LIMIT\tCPU LIMIT\tACTIONS")
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", cell(st.Name), cell(st.Version), protocol, st.State, st.Restarts,
			cell(st.LastError), mem, tasks, cpu, cell(strings.Join(st.Actions, ",")))
	}
	if err := tw.Flush(); err != nil {
		return exitFail
	}
	return code
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
// actually uses, or "": an action `state` that declares a `backend` row and takes no
// required parameter. The firewall plugin's state answers `backend|NAME` rows naming
// the firewall that answered on this host (docs/firewall.md); the manifest's
// mechanisms are only what each system's leg tries first.
func mechanismAction(m host.Manifest) string {
	for _, a := range m.Actions {
		if a.Name != "state" {
			continue
		}
		for i := range a.Params {
			if a.Params[i].Required {
				return ""
			}
		}
		for _, r := range a.Rows {
			if r.Kind == "backend" {
				return a.Name
			}
		}
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
		fmt.Fprintln(stderr, "yuzu-agent:", printableLines(err.Error()))
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

// addPlugin trusts a plugin binary: it copies the file into the plugin dir when it is
// elsewhere, records its SHA-256 in the manifest, starts it once to check that it is a
// yuzu plugin of that name whose definitions agree with its declarations, and keeps
// the change only then. A refusal leaves the plugin dir exactly as it was.
func addPlugin(ctx context.Context, cfg config, log hclog.Logger, file string, stdout, stderr io.Writer) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintln(stderr, "yuzu-agent: plugins add: "+printableLines(fmt.Sprintf(format, args...)))
		return exitFail
	}
	base := filepath.Base(file)
	name, ok := supervisor.PluginName(base)
	if !ok {
		return fail("%s: a plugin binary's name must start with %s", file, supervisor.BinaryPrefix)
	}
	if err := atomicfile.MkdirAll(cfg.pluginDir, 0o755); err != nil {
		return fail("%v", err)
	}
	dest := filepath.Join(cfg.pluginDir, base)
	var undo []func()
	rollback := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	// Read once, the way the supervisor reads a plugin (no link, a regular file,
	// bounded): the manifest vouches for exactly the bytes written into the plugin dir.
	data, err := safefile.ReadFile(file, supervisor.MaxBinaryBytes)
	if err != nil {
		return fail("%v", err)
	}
	if !sameFile(file, dest) {
		restoreDest, err := replaceWith(dest, data)
		if err != nil {
			return fail("copy %s into %s: %v", file, cfg.pluginDir, err)
		}
		undo = append(undo, restoreDest)
	}
	sum := sha256.Sum256(data)
	old, err := manifest.Read(cfg.pluginDir)
	hadManifest := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		rollback()
		return fail("%v", err)
	}
	next := manifest.Manifest{}
	for k, v := range old {
		next[k] = v
	}
	next[base] = sum[:]
	if err := next.Write(cfg.pluginDir); err != nil {
		rollback()
		return fail("%v", err)
	}
	undo = append(undo, func() {
		if !hadManifest {
			_ = os.Remove(filepath.Join(cfg.pluginDir, manifest.FileName))
			return
		}
		_ = old.Write(cfg.pluginDir)
	})
	m, others, err := describeNew(ctx, cfg, log, name, stderr)
	if err != nil {
		rollback()
		return fail("%s does not work as a yuzu plugin; the plugin dir is unchanged: %v", dest, err)
	}
	refuse := func(why string, problems []string) int {
		rollback()
		var b strings.Builder
		for _, p := range problems {
			b.WriteString("\n  " + rows.Printable(p))
		}
		return fail("%s %s: %s; the plugin dir is unchanged:%s", m.Name, m.Version, why, b.String())
	}
	defs, problems := checkShipped(m)
	if len(problems) > 0 {
		return refuse("its definitions disagree with its declarations", problems)
	}
	if problems := shippingRules(m, defs, others); len(problems) > 0 {
		return refuse("its definitions cannot ship", problems)
	}
	fmt.Fprintf(stdout, "added %s: %s %s, %d actions, %d definitions, sha256 %s\n", rows.Printable(dest), cell(m.Name), cell(m.Version),
		len(m.Actions), len(defs), hex.EncodeToString(sum[:]))
	return exitOK
}

// printableLines escapes each line of a message that may quote plugin-supplied text,
// keeping the line breaks the agent put there itself.
func printableLines(msg string) string {
	lines := strings.Split(msg, "\n")
	for i, l := range lines {
		lines[i] = rows.Printable(l)
	}
	return strings.Join(lines, "\n")
}

// describeNew starts the plugin once and returns its manifest, with the definitions
// every other plugin serves (by plugin name) and the agent's workflows (under
// "workflows"), for shippingRules. Another plugin that cannot be asked is named on
// stderr and left out: it must not keep a working plugin from being added.
func describeNew(ctx context.Context, cfg config, log hclog.Logger, name string, stderr io.Writer) (host.Manifest, map[string][]definition.Definition, error) {
	sup, err := newSupervisor(cfg, log)
	if err != nil {
		return host.Manifest{}, nil, err
	}
	defer sup.Close()
	ctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	m, err := sup.Describe(ctx, name)
	if err != nil {
		return host.Manifest{}, nil, err
	}
	others := map[string][]definition.Definition{}
	if wfs, err := definitions.Workflows(); err == nil {
		others[workflowsOwner] = wfs
	}
	for _, n := range sup.Plugins() {
		if n == name {
			continue
		}
		defs, err := pluginDefinitions(ctx, sup, n)
		if err != nil {
			fmt.Fprintln(stderr, "yuzu-agent: plugins add: warning: definition ids not checked against plugin "+rows.Printable(n)+": "+printableLines(err.Error()))
			continue
		}
		others[n] = defs
	}
	return m, others, nil
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

// removePlugin stops trusting a plugin: its line leaves the manifest and its binary
// leaves the plugin dir.
func removePlugin(cfg config, name string, stdout, stderr io.Writer) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintln(stderr, "yuzu-agent: plugins remove: "+rows.Printable(fmt.Sprintf(format, args...)))
		return exitFail
	}
	base := supervisor.BinaryPrefix + name
	if _, ok := supervisor.PluginName(base); !ok || strings.ContainsAny(name, `/\`) || name == "" {
		return fail("%q is not a plugin name", name)
	}
	m, err := manifest.Read(cfg.pluginDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail("%v", err)
	}
	var file string
	for _, candidate := range []string{base, base + ".exe"} {
		if _, ok := m[candidate]; ok {
			file = candidate
		}
	}
	if file == "" {
		return fail("no plugin %s is listed in %s", name, filepath.Join(cfg.pluginDir, manifest.FileName))
	}
	delete(m, file)
	if err := m.Write(cfg.pluginDir); err != nil {
		return fail("%v", err)
	}
	path := filepath.Join(cfg.pluginDir, file)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail("%s is no longer trusted, but its binary could not be removed: %v", path, err)
	}
	fmt.Fprintf(stdout, "removed %s\n", rows.Printable(path))
	return exitOK
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false
	}
	return os.SameFile(fa, fb)
}

// replaceWith writes data to dest through a temp file renamed into place (mode 0755),
// keeping any earlier dest aside so that the returned undo puts it back.
func replaceWith(dest string, data []byte) (undo func(), err error) {
	prev, hadPrev := []byte(nil), false
	if old, err := safefile.ReadFile(dest, supervisor.MaxBinaryBytes); err == nil {
		prev, hadPrev = old, true
	}
	if err := atomicfile.WriteMode(dest, data, 0o755); err != nil {
		return nil, err
	}
	return func() {
		if hadPrev {
			_ = atomicfile.WriteMode(dest, prev, 0o755)
		} else {
			_ = os.Remove(dest)
		}
	}, nil
}
