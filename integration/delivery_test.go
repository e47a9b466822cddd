//go:build linux

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/agent/trust"
	"github.com/yuzugo/yuzu/integration/fleetserver"
)

// Plugins over the fleet link (docs/fleet.md "Plugins over the fleet link"): the test
// server publishes builds of the procs test plugin and has connected agents install
// them through the path of plugins add.

// procsAgent is one `run` agent of a fleet whose plugin dir holds procs 1.0.0.
type procsAgent struct {
	w    *world
	env  []string
	proc *agentProc
	id   string
}

// startProcsAgent makes a plugin dir with procs 1.0.0 (pinned with its version) and
// starts `run` on it against f's server, with extra flags before run.
func startProcsAgent(t *testing.T, f *fleet, extra ...string) *procsAgent {
	t.Helper()
	v1 := procs(t, "1.0.0", "")
	dir := filepath.Join(t.TempDir(), "plugins")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(v1, filepath.Join(dir, "yuzu-plugin-procs"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := &trust.Catalog{Plugins: map[string]*trust.Entry{"procs": {File: "yuzu-plugin-procs", SHA256: procsSum(t, v1), Version: "1.0.0"}}}
	writeFile(t, trust.Path(dir), string(c.Marshal()), 0o644)
	a := &procsAgent{w: &world{t: t, pluginDir: dir, dataDir: filepath.Join(t.TempDir(), "data")}, env: homeEnv(t)}
	if err := os.Mkdir(a.w.dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	a.id = fmt.Sprintf("procs-agent-%p", a)
	args := append([]string{"--plugin-dir", dir, "--data-dir", a.w.dataDir, "--agent-id", a.id}, extra...)
	args = append(args, "run", "--server", f.srv.Addr(), "--ca-cert", f.pki.CA, "--client-cert", f.pki.ClientCert, "--client-key", f.pki.ClientKey)
	a.proc = startAgentEnv(t, a.env, args...)
	return a
}

// TestFleetPluginDelivery: the test server publishes procs 2.0.0 to 20 connected
// agents: every one installs it (checked, tried, current) and says so, its heartbeat
// and every registration after a server restart list 2.0.0; a broken 3.0.0 (it passes
// its trial start and fails at the next) rolls back on all 20.
func TestFleetPluginDelivery(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{})
	const n = 20
	agents := make([]*procsAgent, n)
	for i := range agents {
		agents[i] = startProcsAgent(t, f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := f.srv.WaitAgents(ctx, n); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	for i, a := range agents {
		ids[i] = a.id
	}
	deploy := func(version, mode string) map[string]fleetserver.Result {
		t.Helper()
		b, err := f.srv.PublishFile(procs(t, version, mode), version)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		res, err := f.srv.Deploy(ctx, b, ids)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s %s on %d agents in %s", version, mode, n, time.Since(start).Round(time.Millisecond))
		return res
	}
	for id, r := range deploy("2.0.0", "") {
		if r.Terminal.GetStatus() != agentv1.CommandResponse_SUCCESS || len(r.Rows) != 1 || r.Rows[0] != "plugin|procs|1.0.0|2.0.0|upgrade|running" {
			t.Errorf("agent %s: %s %q", id, r.Terminal.GetStatus(), r.Rows)
		}
	}
	for _, id := range ids {
		if err := f.srv.WaitPlugin(ctx, id, "procs", "2.0.0"); err != nil {
			t.Error(err)
		}
	}
	// A restart of the server: every agent registers again, with 2.0.0.
	before := len(f.srv.Registrations())
	f.srv.Stop()
	if err := f.srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.srv.WaitAccepted(ctx, before+n); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.WaitAgents(ctx, n); err != nil {
		t.Fatal(err)
	}
	last := map[string]*agentv1.RegisterRequest{}
	for _, r := range f.srv.Registrations()[before:] {
		last[r.GetInfo().GetAgentId()] = r
	}
	for _, id := range ids {
		var got string
		for _, p := range last[id].GetInfo().GetPlugins() {
			if p.GetName() == "procs" {
				got = p.GetVersion()
			}
		}
		if got != "2.0.0" {
			t.Errorf("agent %s registered again with procs %q", id, got)
		}
	}
	// The broken build: tried, failed under each agent, rolled back everywhere.
	for id, r := range deploy("3.0.0", "later-exit") {
		if r.Terminal.GetStatus() != agentv1.CommandResponse_FAILURE || len(r.Rows) != 1 ||
			!strings.HasPrefix(r.Rows[0], "error|plugin procs 3.0.0 (sha256 ") || !strings.Contains(r.Rows[0], ") was rolled back to 2.0.0 (sha256 ") {
			t.Errorf("agent %s: %s %q", id, r.Terminal.GetStatus(), r.Rows)
		}
	}
	for _, id := range ids {
		if err := f.srv.WaitPlugin(ctx, id, "procs", "2.0.0"); err != nil {
			t.Error(err)
		}
	}
}

// TestFleetRequirements: a command the server sends through a definition that needs
// procs >= 2.0.0 is refused by an agent with 1.0.0, naming both versions, and runs
// once the agent has 2.0.0; a parameter 1.0.0 does not declare is refused by the
// plugin itself (it takes only what it declares), never ignored.
func TestFleetRequirements(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{})
	a := startProcsAgent(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := f.srv.WaitSubscribed(ctx); err != nil {
		t.Fatal(err)
	}
	do := func(id string, params map[string]string) fleetserver.Result {
		t.Helper()
		r, err := f.srv.Do(ctx, &agentv1.CommandRequest{CommandId: id, Plugin: "procs", Action: "list", Parameters: params})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := do("undeclared", map[string]string{"user": "nobody"})
	if r.Terminal.GetStatus() != agentv1.CommandResponse_FAILURE || strings.Join(r.Rows, "\n") != "error|parameter user: not declared by action list" {
		t.Errorf("user=nobody on 1.0.0: %s %q", r.Terminal.GetStatus(), r.Rows)
	}
	needs := map[string]string{"user": "nobody", "__requires__": "procs >= 2.0.0"}
	r = do("needs-v2", needs)
	if r.Terminal.GetStatus() != agentv1.CommandResponse_REJECTED || r.Terminal.GetOutput() != "this command requires plugin procs >= 2.0.0; this agent has procs 1.0.0" {
		t.Errorf("a requirement of 2.0.0 on 1.0.0: %s %q", r.Terminal.GetStatus(), r.Terminal.GetOutput())
	}
	b, err := f.srv.PublishFile(procs(t, "2.0.0", ""), "2.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := f.srv.Deploy(ctx, b, []string{a.id}); err != nil || res[a.id].Terminal.GetStatus() != agentv1.CommandResponse_SUCCESS {
		t.Fatalf("deploy 2.0.0: %v %+v", err, res)
	}
	r = do("needs-v2-again", needs)
	if r.Terminal.GetStatus() != agentv1.CommandResponse_SUCCESS || strings.Join(r.Rows, "\n") != "proc|42|nobody|sleep" {
		t.Errorf("the same command on 2.0.0: %s %q", r.Terminal.GetStatus(), r.Rows)
	}
}

// TestFleetDeliveryRefusals: what the fleet hands an agent goes through the checks of
// plugins add: a chunk altered in flight, a build signed by a key no publisher has, and
// a signed downgrade are each refused with the reason, the running build serving on; a
// machine that missed a key rotation takes the new key's build with the publisher's
// key-set updates that came with it.
func TestFleetDeliveryRefusals(t *testing.T) {
	t.Parallel()
	a, b, stranger := newSigner(t), newSigner(t), newSigner(t)
	pubDir := publishers(t, "acme", "plugins: procs\n", a)
	f := newFleet(t, fleetserver.Options{})
	ag := startProcsAgentSigned(t, f, pubDir, a)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := f.srv.WaitSubscribed(ctx); err != nil {
		t.Fatal(err)
	}
	deploy := func(version, mode string, corrupt int64, keySets []fleetserver.KeySet, by ...signer) fleetserver.Result {
		t.Helper()
		path := signed(t, procs(t, version, mode), by...)
		bld, err := f.srv.PublishFile(path, version)
		if err != nil {
			t.Fatal(err)
		}
		bld.Corrupt, bld.KeySets = corrupt, keySets
		bld = f.srv.Publish(*bld)
		res, err := f.srv.Deploy(ctx, bld, []string{ag.id})
		if err != nil {
			t.Fatal(err)
		}
		return res[ag.id]
	}
	refusals := []struct {
		name           string
		version, mode  string
		corrupt        int64
		by             []signer
		want           string
		keepsServingAt string
	}{
		{"a chunk altered in flight", "2.0.0", "", 70000, []signer{a}, "the bytes received have SHA-256", "1.0.0"},
		{"a key no publisher has", "2.0.0", "", 0, []signer{stranger}, "its signature is not trusted: signed by key " + trust.KeyID(stranger.pub.ID()) + ", which no configured publisher has", "1.0.0"},
		{"unsigned", "2.0.0", "", 0, nil, "unsigned, and this agent trusts only signed plugins", "1.0.0"},
	}
	for _, c := range refusals {
		r := deploy(c.version, c.mode, c.corrupt, nil, c.by...)
		if r.Terminal.GetStatus() != agentv1.CommandResponse_FAILURE || !strings.Contains(strings.Join(r.Rows, "\n"), c.want) {
			t.Errorf("%s: %s %q, want %q", c.name, r.Terminal.GetStatus(), r.Rows, c.want)
		}
		if err := f.srv.WaitPlugin(ctx, ag.id, "procs", c.keepsServingAt); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if r := deploy("2.0.0", "", 0, nil, a); r.Terminal.GetStatus() != agentv1.CommandResponse_SUCCESS {
		t.Fatalf("2.0.0 signed with A: %s %q", r.Terminal.GetStatus(), r.Rows)
	}
	if r := deploy("1.0.0", "", 0, nil, a); r.Terminal.GetStatus() != agentv1.CommandResponse_FAILURE || !strings.Contains(strings.Join(r.Rows, "\n"), "a downgrade from 2.0.0") {
		t.Errorf("a signed downgrade: %s %q", r.Terminal.GetStatus(), r.Rows)
	}
	// The rotation happened while this machine was away: 3.0.0 is signed with B
	// alone, and the two key-set updates come with it.
	steps := []fleetserver.KeySet{}
	for _, p := range []string{keySet(t, "acme", 1, a, a, b), keySet(t, "acme", 2, b, b)} {
		doc, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sig, err := os.ReadFile(p + ".minisig")
		if err != nil {
			t.Fatal(err)
		}
		steps = append(steps, fleetserver.KeySet{Document: doc, Signature: sig})
	}
	r := deploy("3.0.0", "", 0, steps, b)
	if r.Terminal.GetStatus() != agentv1.CommandResponse_SUCCESS || strings.Join(r.Rows, "\n") != "keyset|acme|0|1\nkeyset|acme|1|2\nplugin|procs|2.0.0|3.0.0|upgrade|running" {
		t.Errorf("3.0.0 signed with B, with the rotation: %s %q", r.Terminal.GetStatus(), r.Rows)
	}
	if err := f.srv.WaitPlugin(ctx, ag.id, "procs", "3.0.0"); err != nil {
		t.Error(err)
	}
}

// startProcsAgentSigned is startProcsAgent with publisher keys configured and procs
// 1.0.0 signed by s, installed with plugins add.
func startProcsAgentSigned(t *testing.T, f *fleet, pubDir string, s signer) *procsAgent {
	t.Helper()
	w := newWorld(t)
	env := homeEnv(t)
	if r := w.pluginsCmd(env, "--publishers-dir", pubDir, "add", signed(t, procs(t, "1.0.0", ""), s)); r.code != 0 {
		t.Fatalf("plugins add of signed 1.0.0:\n%s", r)
	}
	a := &procsAgent{w: w, env: env, id: fmt.Sprintf("signed-agent-%p", w)}
	a.proc = startAgentEnv(t, env, "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "--agent-id", a.id, "--publishers-dir", pubDir,
		"run", "--server", f.srv.Addr(), "--ca-cert", f.pki.CA, "--client-cert", f.pki.ClientCert, "--client-key", f.pki.ClientKey)
	return a
}

// TestRowMismatchesCounted: rows a plugin writes against its declaration (here the
// hostile plugin's `surprise` row, a kind its fields action does not declare) reach the
// server all the same, are counted on the metrics page by plugin and kind, and only
// the first is logged.
func TestRowMismatchesCounted(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, hostileBin)
	addr := freeAddr(t)
	a := f.agent("--metrics-listen", addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 3 {
		r, err := f.srv.Do(ctx, &agentv1.CommandRequest{CommandId: fmt.Sprintf("fields-%d", i), Plugin: "hostile", Action: "fields"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(r.Rows, "\n"), "surprise|z") {
			t.Errorf("the undeclared row did not reach the server: %q", r.Rows)
		}
	}
	series := `yuzu_agent_plugin_rows_mismatched_total{plugin="hostile",kind="(undeclared)"}`
	if v, ok := metric(addr, series); !ok || v != 3 {
		t.Errorf("%s = %v (%v), want 3", series, v, ok)
	}
	if n := strings.Count(a.stderr.String(), "plugin wrote a row its declaration does not allow"); n != 1 {
		t.Errorf("%d log lines for the mismatching rows, want the first only:\n%s", n, a.stderr.String())
	}
}
