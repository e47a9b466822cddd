// Package plugincmd carries out the plugin trust commands of yuzu-agent (`plugins add`,
// `remove`, `pin`, `rollback` and `keys`) and the checks a build passes before it
// enters the catalog, so that the command line only parses their arguments.
package plugincmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/yuzugo/yuzu/agent/internal/control"
	"github.com/yuzugo/yuzu/agent/internal/installer"
	"github.com/yuzugo/yuzu/agent/internal/output"
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

// StartWait bounds how long a command waits for plugins to start.
const StartWait = 30 * time.Second

// The exit codes the commands return.
const (
	exitOK   = 0
	exitFail = 1
)

// Env is what the commands need of the agent's configuration.
type Env struct {
	PluginDir     string // the plugin dir and its catalog
	DataDir       string // where a running agent answers (control.Path)
	StateDir      string // the trust state: rollback history, accepted key-set updates
	PublishersDir string // the publishers' keys
	AgentVersion  string // this agent's version, for a definition's minAgentVersion
	// SupervisorOptions are the supervisor's settings from the agent's, for a trial
	// start and for asking the other plugins what they serve.
	SupervisorOptions func() (supervisor.Options, error)
	// NewSupervisor starts no plugin yet; it is how the other plugins are asked.
	NewSupervisor  func() (*supervisor.Supervisor, error)
	Stdout, Stderr io.Writer
}

// AddOptions are the flags of `plugins add`.
type AddOptions struct {
	Signature      string // the signature of the one FILE; else FILE.minisig beside each
	Force          bool
	AllowDowngrade bool
	IfNewer        bool
}

// Add installs plugin builds (installer.Install: checked before any of their code
// runs, stored, started once, checked again, made current in the catalog) and tells a
// running agent, which starts each new build beside the running one and says how that
// went. Every file is tried; the code is 1 when one was refused or rolled back.
func Add(ctx context.Context, env Env, opts AddOptions, files []string) int {
	fail := func(format string, args ...any) {
		fmt.Fprintln(env.Stderr, "yuzu-agent: plugins add: "+rows.PrintableLines(fmt.Sprintf(format, args...)))
	}
	if opts.Signature != "" && len(files) != 1 {
		fail("--signature names the signature of one FILE; for several, put each beside its file as FILE.minisig")
		return exitFail
	}
	keys, err := LoadKeys(env.PublishersDir, env.StateDir)
	if err != nil {
		fail("%v", err)
		return exitFail
	}
	if err := atomicfile.MkdirAll(env.PluginDir, 0o755); err != nil {
		fail("%v", err)
		return exitFail
	}
	ic := installerConfig(env, keys, func(ctx context.Context, name string) map[string][]definition.Definition {
		return otherDefinitions(ctx, env, name)
	})
	code := exitOK
	var changed []string
	for _, file := range files {
		offer, err := offerOf(opts, file)
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
			fmt.Fprintf(env.Stdout, "skipped %s: %s\n", rows.Printable(file), output.Cell(res.Skipped))
		case res.Change.Kind == trust.KindSame:
			fmt.Fprintf(env.Stdout, "%s\n", output.Cell(res.Change.Describe()))
		default:
			defs, _ := res.Manifest.ServedDefinitions()
			fmt.Fprintf(env.Stdout, "added %s, %s, %d actions, %d definitions\n", output.Cell(res.Change.Describe()),
				output.Cell(trustWord(res.Change.Entry)), len(res.Manifest.Actions), len(defs))
			changed = append(changed, res.Change.Entry.Name())
		}
	}
	if len(changed) > 0 && tellAgent(ctx, env, changed) != exitOK {
		code = exitFail
	}
	return code
}

// offerOf reads a file offered to plugins add, and its signature: --signature, else
// FILE.minisig when there is one.
func offerOf(opts AddOptions, file string) (installer.Offer, error) {
	o := installer.Offer{FileName: filepath.Base(file), Source: "plugins add " + file,
		Options: trust.Options{Force: opts.Force, AllowDowngrade: opts.AllowDowngrade}, IfNewer: opts.IfNewer}
	var err error
	if o.Bytes, err = trust.ReadSource(file); err != nil {
		return o, err
	}
	sigPath, explicit := opts.Signature, opts.Signature != ""
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

// LoadKeys reads the publishers' keys and the key-set updates accepted earlier (in
// stateDir, the trust state).
func LoadKeys(publishersDir, stateDir string) (*trust.Keys, error) {
	return trust.LoadKeys(publishersDir, filepath.Join(stateDir, "keysets"))
}

// installerConfig is how a build is tried and checked before it enters the catalog:
// one trial start with the agent's own settings, then its definitions against its
// declarations and against every other plugin's (others: by plugin name, and the
// agent's workflows; see servedByOthers).
func installerConfig(env Env, keys *trust.Keys, others func(ctx context.Context, name string) map[string][]definition.Definition) installer.Config {
	return installer.Config{
		PluginDir: env.PluginDir, StateDir: env.StateDir, Keys: keys,
		Trial: func(ctx context.Context, b supervisor.Binary) (host.Manifest, error) {
			o, err := env.SupervisorOptions()
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
			if problems := shippingRules(env.AgentVersion, m, defs, others(ctx, m.Name)); len(problems) > 0 {
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
func tellAgent(ctx context.Context, env Env, changed []string) int {
	path := control.Path(env.DataDir)
	r, err := control.Reload(ctx, path)
	if errors.Is(err, control.ErrNotRunning) {
		fmt.Fprintf(env.Stdout, "no running agent answers at %s: the change takes effect when the plugins next start\n", rows.Printable(path))
		return exitOK
	}
	if err == nil && r.Error != "" {
		err = errors.New(r.Error)
	}
	if err != nil {
		fmt.Fprintln(env.Stderr, "yuzu-agent: the running agent did not take the change: "+rows.Printable(err.Error()))
		return exitFail
	}
	code := exitOK
	for _, name := range changed {
		i := slices.IndexFunc(r.Plugins, func(st supervisor.Status) bool { return st.Name == name })
		if i < 0 {
			fmt.Fprintf(env.Stdout, "running agent: %s is gone\n", output.Cell(name))
			continue
		}
		st := r.Plugins[i]
		switch {
		case st.LastRollback != "" && strings.Contains(st.LastError, "rolled back"):
			fmt.Fprintf(env.Stdout, "running agent: %s rolled back to %s: %s\n", output.Cell(name), output.Cell(st.Build), output.Cell(st.LastRollback))
			code = exitFail
		case st.State == supervisor.StateRefused:
			fmt.Fprintf(env.Stdout, "running agent: %s refused: %s\n", output.Cell(name), output.Cell(st.LastError))
			code = exitFail
		default:
			pid := ""
			if st.Pid > 0 {
				pid = fmt.Sprintf(", pid %d", st.Pid)
			}
			fmt.Fprintf(env.Stdout, "running agent: %s %s%s (%s)\n", output.Cell(name), output.Cell(st.Build), pid, st.State)
		}
	}
	return code
}

// otherDefinitions is servedByOthers through a supervisor of its own, which starts
// each other plugin only to ask it; without one, only the workflows.
func otherDefinitions(ctx context.Context, env Env, name string) map[string][]definition.Definition {
	sup, err := env.NewSupervisor()
	if err != nil {
		return servedByOthers(ctx, nil, name, env.Stderr)
	}
	defer sup.Close()
	return servedByOthers(ctx, sup, name, env.Stderr)
}

// servedByOthers returns the definitions every plugin of sup but name serves (by
// plugin name) and the agent's workflows, for the shipping rules of installerConfig.
// Another plugin that cannot be asked is named on warn and left out: it must not keep
// a working plugin from being added. sup may be nil.
func servedByOthers(ctx context.Context, sup *supervisor.Supervisor, name string, warn io.Writer) map[string][]definition.Definition {
	others := map[string][]definition.Definition{}
	if wfs, err := definitions.Workflows(); err == nil {
		others[workflowsOwner] = wfs
	}
	if sup == nil {
		return others
	}
	ctx, cancel := context.WithTimeout(ctx, StartWait)
	defer cancel()
	for _, n := range sup.Plugins() {
		if n == name {
			continue
		}
		defs, err := Served(ctx, sup, n)
		if err != nil {
			fmt.Fprintln(warn, "yuzu-agent: plugins add: warning: definition ids not checked against plugin "+rows.Printable(n)+": "+rows.PrintableLines(err.Error()))
			continue
		}
		others[n] = defs
	}
	return others
}

// Served returns the definitions plugin n of sup serves: its documents laid over the
// definitions derived from its declarations (host.Manifest.ServedDefinitions).
func Served(ctx context.Context, sup *supervisor.Supervisor, n string) ([]definition.Definition, error) {
	m, err := sup.Describe(ctx, n)
	if err != nil {
		return nil, err
	}
	defs, err := m.ServedDefinitions()
	if err != nil {
		return nil, fmt.Errorf("plugin %s serves definitions that do not parse: %w", n, err)
	}
	return defs, nil
}

// workflowsOwner names the agent's own workflow definitions among the owners of ids.
const workflowsOwner = "the agent's workflows"

// shippingRules lists what keeps a plugin's definitions from shipping: an id another
// plugin (or a workflow) already serves, naming both, and a minAgentVersion newer than
// agentVersion, naming both versions (docs/agent.md#adding-a-plugin).
func shippingRules(agentVersion string, m host.Manifest, defs []definition.Definition, others map[string][]definition.Definition) []string {
	var problems []string
	owners := slices.Sorted(maps.Keys(others))
	for _, d := range defs {
		for _, o := range owners {
			if slices.ContainsFunc(others[o], func(od definition.Definition) bool { return od.ID == d.ID }) {
				problems = append(problems, fmt.Sprintf("definition %s of plugin %s: the id is already served by %s", d.ID, m.Name, pluginOwner(o)))
			}
		}
		if err := d.CheckAgentVersion(agentVersion); err != nil {
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

// Remove stops trusting a plugin: its entry leaves the catalog and its builds the
// plugin dir; a running agent lets the plugin finish what it holds.
func Remove(ctx context.Context, env Env, name string) int {
	if !sdk.ValidName(name) {
		fmt.Fprintln(env.Stderr, "yuzu-agent: plugins remove: "+rows.Printable(strconv.Quote(name))+" is not a plugin name")
		return exitFail
	}
	gone, err := installer.Remove(ctx, env.PluginDir, name)
	if gone == nil {
		fmt.Fprintln(env.Stderr, "yuzu-agent: plugins remove: "+rows.Printable(err.Error()))
		return exitFail
	}
	fmt.Fprintf(env.Stdout, "removed %s %s\n", output.Cell(name), output.Cell(gone.Label()))
	code := exitOK
	if err != nil {
		fmt.Fprintln(env.Stderr, "yuzu-agent: plugins remove: "+rows.Printable(err.Error()))
		code = exitFail
	}
	if tellAgent(ctx, env, nil) != exitOK {
		code = exitFail
	}
	return code
}

// Rollback makes a plugin's previous build current again on the operator's word.
func Rollback(ctx context.Context, env Env, name string) int {
	if !sdk.ValidName(name) {
		fmt.Fprintln(env.Stderr, "yuzu-agent: plugins rollback: "+rows.Printable(strconv.Quote(name))+" is not a plugin name")
		return exitFail
	}
	back, from, err := installer.Rollback(ctx, installer.Config{PluginDir: env.PluginDir, StateDir: env.StateDir}, name)
	if err != nil {
		fmt.Fprintln(env.Stderr, "yuzu-agent: plugins rollback: "+rows.Printable(err.Error()))
		return exitFail
	}
	fmt.Fprintf(env.Stdout, "rolled back %s %s -> %s; %s is not installed again unless forced\n", output.Cell(name), output.Cell(from.VersionOrUnknown()),
		output.Cell(back.Label()), output.Cell(from.Label()))
	return tellAgent(ctx, env, []string{name})
}

// Pin is `plugins pin FILE...`: builds already at the top of the plugin dir recorded
// by checksum, without a start (installer.Pin).
func Pin(ctx context.Context, env Env, files []string) int {
	keys, err := LoadKeys(env.PublishersDir, env.StateDir)
	if err == nil {
		var pinned []*trust.Entry
		if pinned, err = installer.Pin(ctx, installer.Config{PluginDir: env.PluginDir, Keys: keys}, files); err == nil {
			for _, e := range pinned {
				fmt.Fprintf(env.Stdout, "pinned %s %s, %s\n", output.Cell(e.Name()), output.Cell(e.Label()), output.Cell(trustWord(e)))
			}
			return exitOK
		}
	}
	fmt.Fprintln(env.Stderr, "yuzu-agent: plugins pin: "+rows.Printable(err.Error()))
	return exitFail
}

// UpdateKeys is `plugins keys update FILE`: a signed key-set update (FILE.minisig
// beside it) taken into use.
func UpdateKeys(env Env, file string) int {
	keys, err := LoadKeys(env.PublishersDir, env.StateDir)
	if err != nil {
		fmt.Fprintln(env.Stderr, "yuzu-agent: "+rows.Printable(err.Error()))
		return exitFail
	}
	doc, err := safefile.ReadFile(file, 64<<10)
	var sig []byte
	if err == nil {
		sig, err = safefile.ReadFile(file+".minisig", 64<<10)
	}
	var res trust.AdvanceResult
	if err == nil {
		res, err = keys.Advance(doc, sig)
	}
	if err != nil {
		fmt.Fprintln(env.Stderr, "yuzu-agent: plugins keys update: "+rows.Printable(err.Error()))
		return exitFail
	}
	if !res.Applied {
		fmt.Fprintf(env.Stdout, "publisher %s is at key set %d already (this update is %d)\n", res.Publisher, res.From, res.To)
		return exitOK
	}
	fmt.Fprintf(env.Stdout, "publisher %s: key set %d -> %d\n", res.Publisher, res.From, res.To)
	return exitOK
}

// ListKeys is `plugins keys`: the publishers this agent trusts, each key set with its
// serial, the plugins each may sign and the keys it revoked.
func ListKeys(env Env) (int, error) {
	keys, err := LoadKeys(env.PublishersDir, env.StateDir)
	if err != nil {
		fmt.Fprintln(env.Stderr, "yuzu-agent: "+rows.Printable(err.Error()))
		return exitFail, nil
	}
	for _, w := range keys.Warnings {
		fmt.Fprintln(env.Stderr, "yuzu-agent: warning: "+rows.Printable(w))
	}
	if !keys.Configured() {
		fmt.Fprintf(env.Stdout, "no publisher keys in %s: plugins are trusted by their SHA-256 alone (unsigned)\n", rows.Printable(keys.Dir))
		return exitOK, nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
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
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", name, p.Serial, strings.Join(ids, " "), output.Cell(plugins), output.Cell(strings.Join(revoked, " ")))
	}
	return exitOK, tw.Flush()
}
