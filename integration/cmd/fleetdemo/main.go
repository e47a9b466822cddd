// Command fleetdemo is the fleet part of `make demo`: it starts the test fleet server
// (integration/fleetserver) on loopback with a throw-away certificate authority, runs
// `yuzu-agent run` against it over mutual TLS, dispatches instructions picked from the
// definitions the installed plugins serve, prints every answer as the server receives
// it, restarts the server to show the agent reconnecting (and registering the tag it
// just set), and stops both. It exits non-zero when anything behaves unexpectedly.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/integration/fleetserver"
	"github.com/yuzugo/yuzu/sdk/definition"
	"github.com/yuzugo/yuzu/sdk/rows"
)

func main() {
	agent := flag.String("agent", "bin/yuzu-agent", "the agent binary")
	pluginDir := flag.String("plugin-dir", "bin/plugins", "the plugin dir (with plugins.sha256)")
	perPlugin := flag.Int("per-plugin", 4, "at most this many read-only instructions per plugin")
	flag.Parse()
	if err := demo(*agent, *pluginDir, *perPlugin); err != nil {
		fmt.Fprintln(os.Stderr, "fleet demo: FAILED:", err)
		os.Exit(1)
	}
}

// step is one instruction to dispatch: a definition and the parameters filled in.
type step struct {
	def    definition.Definition
	params map[string]string
}

func demo(agent, pluginDir string, perPlugin int) error {
	work, err := os.MkdirTemp("", "yuzu-fleet-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	dataDir := filepath.Join(work, "data")
	sample := filepath.Join(work, "sample.txt")
	if err := os.WriteFile(sample, []byte("yuzu fleet demo\nhello\n"), 0o600); err != nil {
		return err
	}
	steps, err := pick(pluginDir, samples(work, sample), perPlugin)
	if err != nil {
		return err
	}

	pki, err := fleetserver.NewPKI(filepath.Join(work, "pki"), "demo")
	if err != nil {
		return err
	}
	var printMu sync.Mutex
	// An answer the agent sends again (the server restarted before it could say it
	// had the first) is labelled, once per command, so it does not read as a second
	// run.
	answered, resent := map[string]bool{}, map[string]bool{}
	srv, err := fleetserver.Start("127.0.0.1:0", fleetserver.Options{
		TLS: pki.ServerTLS(),
		OnResponse: func(r *agentv1.CommandResponse) {
			printMu.Lock()
			defer printMu.Unlock()
			id := r.GetCommandId()
			if answered[id] && !resent[id] {
				resent[id] = true
				fmt.Printf("   (%s: the agent sends this answer again from its spool after the reconnect; it ran once)\n", rows.Printable(id))
			}
			fleetserver.WriteResponse(os.Stdout, r)
			if r.GetStatus() != agentv1.CommandResponse_RUNNING {
				answered[id] = true
			}
		},
	})
	if err != nil {
		return err
	}
	defer srv.Stop()
	fmt.Printf("fleet: test server on %s, mutual TLS with a throw-away CA (%s)\n", srv.Addr(), pki.Dir)

	var agentLog bytes.Buffer
	cmd := exec.Command(agent, "--plugin-dir", pluginDir, "--data-dir", dataDir, "run",
		"--server", srv.Addr(), "--ca-cert", pki.CA, "--client-cert", pki.ClientCert, "--client-key", pki.ClientKey)
	cmd.Stdout, cmd.Stderr = &agentLog, &agentLog
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	fail := func(err error) error {
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("%w\nagent log:\n%s", err, agentLog.String())
	}
	fmt.Printf("fleet: $ yuzu-agent --plugin-dir %s --data-dir %s run --server %s --ca-cert ... --client-cert ... --client-key ...\n", pluginDir, dataDir, srv.Addr())

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg, err := srv.WaitAccepted(ctx, 1)
	if err != nil {
		return fail(err)
	}
	fleetserver.WriteRegistration(os.Stdout, reg)
	if err := srv.WaitSubscribed(ctx); err != nil {
		return fail(err)
	}

	problems := 0
	for i, st := range steps {
		id := fmt.Sprintf("demo-%02d", i+1)
		printMu.Lock()
		fmt.Printf("\n-> %s %s as %s (%s %s%s)\n", st.def.Type, st.def.ID, id, st.def.Plugin, st.def.Action, paramText(st.params))
		printMu.Unlock()
		r, err := srv.Do(ctx, &agentv1.CommandRequest{CommandId: id, Plugin: st.def.Plugin, Action: st.def.Action, Parameters: st.params})
		if err != nil {
			return fail(err)
		}
		// A shipped plugin's instruction with the demo's own inputs must work; only a
		// platform limitation (UNAVAILABLE, e.g. no firewall backend here) may fail.
		if r.Terminal.GetStatus() != agentv1.CommandResponse_SUCCESS &&
			r.Terminal.GetPluginResultStatus() != agentv1.CommandResponse_PLUGIN_RESULT_UNAVAILABLE {
			problems++
		}
	}

	fmt.Printf("\nfleet: restarting the server; the agent reconnects and registers again with its tags\n")
	srv.Stop()
	if err := srv.Restart(); err != nil {
		return fail(err)
	}
	if reg, err = srv.WaitAccepted(ctx, 2); err != nil {
		return fail(err)
	}
	fleetserver.WriteRegistration(os.Stdout, reg)

	fmt.Printf("\nfleet: stopping the agent (SIGTERM)\n")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			return fmt.Errorf("the agent stopped with %v\nagent log:\n%s", err, agentLog.String())
		}
	case <-time.After(30 * time.Second):
		return fail(fmt.Errorf("the agent did not stop within 30 s"))
	}
	srv.Stop()
	fmt.Printf("fleet: agent exited 0; server stopped; %d instructions dispatched, %d answered as expected\n", len(steps), len(steps)-problems)
	if problems > 0 {
		return fmt.Errorf("%d instructions failed\nagent log:\n%s", problems, agentLog.String())
	}
	return nil
}

// samples are the values the demo fills parameters with, by parameter name: its own
// temporary files, so nothing outside the demo's directory is read or changed.
func samples(work, file string) map[string]string {
	return map[string]string{
		"key":       "demo",
		"value":     "fleet",
		"path":      file,
		"base_dir":  work,
		"directory": work,
		"root":      work,
		"pattern":   "yuzu",
		"search":    "yuzu",
		"algorithm": "sha256",
	}
}

// pick chooses the instructions: from every plugin's served definitions that run on
// this platform, the tags plugin's auto-approved set action (so the tag reads that
// follow have something to show), then up to perPlugin read-only questions each, in
// the plugins' own order, whose parameters the samples can fill and that pass their
// own validation.
func pick(pluginDir string, sample map[string]string, perPlugin int) ([]step, error) {
	sup, err := supervisor.New(supervisor.Options{PluginDir: pluginDir, DataDir: os.TempDir()})
	if err != nil {
		return nil, err
	}
	defer sup.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var steps []step
	for _, name := range sup.Plugins() {
		m, err := sup.Describe(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", name, err)
		}
		defs, err := m.ServedDefinitions()
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", name, err)
		}
		var setup, questions []step
		for _, d := range defs {
			if !d.SupportsPlatform(runtime.GOOS) {
				continue
			}
			params, ok := fill(d, forAction(d.Action, sample))
			if !ok {
				continue
			}
			switch {
			case d.Type == definition.TypeQuestion && len(questions) < perPlugin:
				questions = append(questions, step{d, params})
			case d.Type == definition.TypeAction && d.Approval == definition.ApprovalAuto && d.Plugin == "tags" && d.Action == "set":
				setup = append(setup, step{d, params})
			}
		}
		steps = append(append(steps, setup...), questions...)
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("no plugin in %s serves a definition the demo can run", pluginDir)
	}
	return steps, nil
}

// forAction adjusts the samples to an action: one that works on a directory
// (list_dir, search_dir) gets the demo's directory as its path.
func forAction(action string, sample map[string]string) map[string]string {
	if !strings.Contains(action, "dir") {
		return sample
	}
	s := maps.Clone(sample)
	s["path"] = s["directory"]
	return s
}

// fill gives every parameter of d that has a sample its sample value; it reports false
// when a required one has none or the result fails d's validation.
func fill(d definition.Definition, sample map[string]string) (map[string]string, bool) {
	params := map[string]string{}
	for _, p := range d.Parameters {
		v, ok := sample[p.Name]
		if !ok {
			if p.Required {
				return nil, false
			}
			continue
		}
		params[p.Name] = v
	}
	return params, d.Validate(params) == nil
}

func paramText(params map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(params)) {
		fmt.Fprintf(&b, " %s=%s", k, params[k])
	}
	return b.String()
}
