//go:build linux

package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"aead.dev/minisign"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/agent/trust"
	"github.com/yuzugo/yuzu/integration/fleetserver"
)

// The plugin catalog, upgrades and rollbacks (docs/agent.md "Plugin catalog and
// signatures", "Upgrades and rollback"), with the procs test plugin built in versions.

// procsBuild is one build of the procs plugin.
type procsBuild struct {
	once sync.Once
	path string
	err  error
}

var procsBuilds sync.Map // "version/mode" -> *procsBuild

// procs returns a build of the procs test plugin of that version and failure mode
// (testplugins/procs), built once per run.
func procs(t testing.TB, version, mode string) string {
	t.Helper()
	if built.root == "" {
		t.Skip("the procs plugin is built per version in the test: it needs the repository, and this run has prebuilt binaries only")
	}
	v, _ := procsBuilds.LoadOrStore(version+"/"+mode, &procsBuild{})
	b := v.(*procsBuild)
	b.once.Do(func() {
		dir := filepath.Join(built.binDir, "procs-"+version+"-"+mode)
		if b.err = os.MkdirAll(dir, 0o755); b.err != nil {
			return
		}
		b.path = filepath.Join(dir, "yuzu-plugin-procs")
		cmd := exec.Command("go", "build", "-ldflags", "-X main.version="+version+" -X main.mode="+mode, "-o", b.path, "./integration/testplugins/procs")
		cmd.Dir = built.root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build procs %s %s: %v\n%s", version, mode, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// procsSum is the hex SHA-256 of a procs build.
func procsSum(t testing.TB, path string) string {
	t.Helper()
	sum, err := fileSHA256(path)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// homeEnv is baseEnv with HOME in a directory of the test's own: the procs plugin
// counts its starts there.
func homeEnv(t testing.TB) []string {
	t.Helper()
	home := t.TempDir()
	env := baseEnv()
	for i, e := range env {
		if strings.HasPrefix(e, "HOME=") {
			env[i] = "HOME=" + home
		}
	}
	return env
}

// pluginsCmd runs `yuzu-agent --plugin-dir P --data-dir D plugins ARGS`.
func (w *world) pluginsCmd(env []string, args ...string) run {
	w.t.Helper()
	return runAgent(w.t, env, append([]string{"--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "plugins"}, args...)...)
}

// TestPluginsAddVersions: plugins add says what it changes and holds to the version
// rules: an upgrade goes in, a downgrade and the same version as other bytes only on
// the operator's word, a build rolled back before only when forced; the previous
// build is kept, and rollback brings it back.
func TestPluginsAddVersions(t *testing.T) {
	t.Parallel()
	w := newWorld(t, tagsBin)
	env := homeEnv(t)
	v1, v2, v2b, v3 := procs(t, "1.0.0", ""), procs(t, "2.0.0", ""), procs(t, "2.0.0", "crash"), procs(t, "3.0.0", "")
	s1, s2, s2b := procsSum(t, v1)[:12], procsSum(t, v2)[:12], procsSum(t, v2b)[:12]
	noAgent := "no running agent answers at " + filepath.Join(w.dataDir, "run", "agent.sock") + ": the change takes effect when the plugins next start\n"
	steps := []struct {
		args        []string
		code        int
		out, errOut string
	}{
		{[]string{v1}, 0, "added procs 1.0.0 (sha256 " + s1 + ") (new), unsigned, 2 actions, 0 definitions\n" + noAgent, ""},
		{[]string{v2}, 0, "added procs 1.0.0 -> 2.0.0 (sha256 " + s2 + ") (upgrade), unsigned, 2 actions, 3 definitions\n" + noAgent, ""},
		{[]string{v2}, 0, "procs 2.0.0 (sha256 " + s2 + ") is installed already\n", ""},
		{[]string{v1}, 1, "", "plugin procs 1.0.0 (sha256 " + s1 + ") refused: a downgrade from 2.0.0; pass --allow-downgrade to install it"},
		{[]string{v2b}, 1, "", "plugin procs 2.0.0 (sha256 " + s2b + ") refused: version 2.0.0 is installed already as other bytes (sha256 " + s2 + "); a new build needs a new version, or --force"},
		{[]string{"--force", v2b}, 0, "added procs 2.0.0 -> 2.0.0 (sha256 " + s2b + ") (rebuild), unsigned, 2 actions, 3 definitions\n" + noAgent, ""},
		{[]string{"--if-newer", v1}, 0, "skipped " + v1 + ": procs 2.0.0 (sha256 " + s2b + ") is installed, not older than 1.0.0\n", ""},
	}
	for i, s := range steps {
		r := w.pluginsCmd(env, append([]string{"add"}, s.args...)...)
		if r.code != s.code || r.stdout != s.out || !strings.Contains(r.stderr, s.errOut) {
			t.Fatalf("step %d, plugins add %s: want exit %d, stdout %q and %q on stderr:\n%s", i, strings.Join(s.args, " "), s.code, s.out, s.errOut, r)
		}
	}
	// rollback brings the build before back, and the rolled-back one is refused
	// unless forced.
	r := w.pluginsCmd(env, "rollback", "procs")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "rolled back procs 2.0.0 -> 2.0.0 (sha256 "+s2+"); 2.0.0 (sha256 "+s2b+") is not installed again unless forced\n") {
		t.Fatalf("plugins rollback:\n%s", r)
	}
	if r := w.exec("procs", "version"); r.code != 0 || !strings.HasPrefix(r.stdout, "version|2.0.0|") {
		t.Errorf("after the rollback:\n%s", r)
	}
	r = w.pluginsCmd(env, "add", "--force", v2b)
	if r.code != 1 && strings.Contains(r.stderr, "rolled back") {
		t.Errorf("a forced add of the rolled-back build: %s", r)
	}
	r = w.pluginsCmd(env, "rollback", "procs")
	if r.code != 0 {
		t.Fatalf("second rollback:\n%s", r)
	}
	r = w.pluginsCmd(env, "add", v2b)
	if r.code != 1 || !strings.Contains(r.stderr, "this build was rolled back on ") {
		t.Errorf("the rolled-back build again:\n%s", r)
	}
	// An allowed downgrade lowers the floor; the store keeps the current and the
	// previous build only.
	r = w.pluginsCmd(env, "add", "--allow-downgrade", v1)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "added procs 2.0.0 -> 1.0.0 (sha256 "+s1+") (downgrade)") {
		t.Fatalf("an allowed downgrade:\n%s", r)
	}
	r = w.pluginsCmd(env, "add", v3)
	if r.code != 0 {
		t.Fatalf("v3:\n%s", r)
	}
	builds, _ := os.ReadDir(filepath.Join(w.pluginDir, "store", "procs"))
	if len(builds) != 2 {
		t.Errorf("%d builds in the store, want the current and the previous", len(builds))
	}
	r = w.pluginsCmd(env)
	if !regexp.MustCompile(`(?m)^procs +3\.0\.0 +1 +unsigned +running +0 +- `).MatchString(r.stdout) {
		t.Errorf("plugins:\n%s", r)
	}
}

// The one check exec's path makes of a definition's versioned requirements: a
// definition that needs a plugin version the agent lacks is refused, naming both.
func TestExecDefinitionRequirement(t *testing.T) {
	t.Parallel()
	w := newWorld(t, tagsBin)
	env := homeEnv(t)
	if r := w.pluginsCmd(env, "add", procs(t, "2.0.0", "")); r.code != 0 {
		t.Fatalf("plugins add:\n%s", r)
	}
	w.expect(agentError("definition test.procs.tagged requires plugin tags >= 9.0.0; this agent has tags 0.1.0"), 1, "test.procs.tagged")
	w.expect("proc|42|nobody|sleep\n[result_status] OK / FULL\n", 0, "test.procs.by_user", "user=nobody")
}

// signer is a publisher key made for a test.
type signer struct {
	pub  minisign.PublicKey
	priv minisign.PrivateKey
}

func newSigner(t testing.TB) signer {
	t.Helper()
	pub, priv, err := minisign.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return signer{pub, priv}
}

// sign signs as `minisign -S` does (prehashed).
func (s signer) sign(msg []byte) []byte {
	r := minisign.NewReader(bytes.NewReader(msg))
	_, _ = io.Copy(io.Discard, r)
	return r.Sign(s.priv)
}

// signed copies a build into a directory of its own with a signature beside it by
// each signer (FILE.minisig), and returns the copy's path.
func signed(t testing.TB, build string, by ...signer) string {
	t.Helper()
	data, err := os.ReadFile(build)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), filepath.Base(build))
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	var sig []byte
	for _, s := range by {
		sig = append(sig, s.sign(data)...)
	}
	if len(by) > 0 {
		writeFile(t, path+".minisig", string(sig), 0o644)
	}
	return path
}

// keySet writes a signed key-set update and returns its path (the signature beside
// it).
func keySet(t testing.TB, publisher string, serial int, signedBy signer, keys ...signer) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "yuzu-keyset 1\npublisher %s\nserial %d\n", publisher, serial)
	for _, k := range keys {
		b.WriteString("key " + k.pub.String() + "\n")
	}
	path := filepath.Join(t.TempDir(), fmt.Sprintf("%s-%d.keyset", publisher, serial))
	writeFile(t, path, b.String(), 0o644)
	writeFile(t, path+".minisig", string(signedBy.sign([]byte(b.String()))), 0o644)
	return path
}

// publishers writes a publishers dir trusting keys for publisher name.
func publishers(t testing.TB, name string, extra string, keys ...signer) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "publishers")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "untrusted comment: minisign public key %s\n%s\n", trust.KeyID(k.pub.ID()), k.pub.String())
	}
	writeFile(t, filepath.Join(dir, name+".pub"), b.String()+extra, 0o644)
	return dir
}

// TestPluginSignatures: with publisher keys configured, only builds their keys signed
// go in; each refusal names its reason. A key rotation from key A to key B reaches a
// machine that missed it, through the key-set updates applied in order.
func TestPluginSignatures(t *testing.T) {
	t.Parallel()
	a, b, stranger := newSigner(t), newSigner(t), newSigner(t)
	pubDir := publishers(t, "acme", "plugins: procs\n", a)
	v1, v2, v2b, v3, v4 := procs(t, "1.0.0", ""), procs(t, "2.0.0", ""), procs(t, "2.0.0", "crash"), procs(t, "3.0.0", ""), procs(t, "4.0.0", "")
	w := newWorld(t, tagsBin)
	env := homeEnv(t)
	add := func(args ...string) run {
		return w.pluginsCmd(env, append([]string{"--publishers-dir", pubDir, "add"}, args...)...)
	}
	tampered := signed(t, v1, a)
	if err := copyFile(v2, tampered, 0o755); err != nil { // v1's signature beside v2's bytes
		t.Fatal(err)
	}
	refusals := []struct {
		name, file, reason string
	}{
		{"unsigned", v1, "refused: unsigned, and this agent trusts only signed plugins (publisher keys are configured in " + pubDir + ")"},
		{"unknown key", signed(t, v1, stranger), "its signature is not trusted: signed by key " + trust.KeyID(stranger.pub.ID()) + ", which no configured publisher has"},
		{"tampered", tampered, "its signature is not trusted: the signature by key " + trust.KeyID(a.pub.ID()) + " of publisher acme does not match these bytes"},
	}
	for _, c := range refusals {
		if r := add(c.file); r.code != 1 || !strings.Contains(r.stderr, c.reason) {
			t.Errorf("%s: want exit 1 and %q:\n%s", c.name, c.reason, r)
		}
	}
	if c := readCatalog(t, w.pluginDir); c.Entry("procs") != nil {
		t.Fatal("a refused build is in the catalog")
	}
	r := add(signed(t, v1, a))
	if r.code != 0 || !strings.Contains(r.stdout, "(new), signed by acme (key "+trust.KeyID(a.pub.ID())+")") {
		t.Fatalf("a signed build:\n%s", r)
	}
	if r := add(signed(t, v2, a)); r.code != 0 {
		t.Fatalf("a signed upgrade:\n%s", r)
	}
	for _, c := range []struct{ name, file, reason string }{
		{"signed downgrade", signed(t, v1, a), "a downgrade from 2.0.0"},
		{"same version, new bytes", signed(t, v2b, a), "version 2.0.0 is installed already as other bytes"},
	} {
		if r := add(c.file); r.code != 1 || !strings.Contains(r.stderr, c.reason) {
			t.Errorf("%s: want exit 1 and %q:\n%s", c.name, c.reason, r)
		}
	}
	r = w.pluginsCmd(env, "--publishers-dir", pubDir)
	if !regexp.MustCompile(`(?m)^procs +2\.0\.0 +1 +signed:acme +running `).MatchString(r.stdout) {
		t.Errorf("plugins:\n%s", r)
	}

	// Rotation: serial 1 lists A and B (signed with A), serial 2 lists B (signed with
	// B). This machine takes both and then v3 signed with B alone.
	step1, step2 := keySet(t, "acme", 1, a, a, b), keySet(t, "acme", 2, b, b)
	for _, step := range []string{step1, step2} {
		if r := w.pluginsCmd(env, "--publishers-dir", pubDir, "keys", "update", step); r.code != 0 {
			t.Fatalf("keys update %s:\n%s", step, r)
		}
	}
	if r := add(signed(t, v3, b)); r.code != 0 {
		t.Fatalf("v3 signed with B after the rotation:\n%s", r)
	}
	// A second machine was offline through the rotation: it still trusts A alone.
	off := newWorld(t, tagsBin)
	offAdd := func(args ...string) run {
		return off.pluginsCmd(env, append([]string{"--publishers-dir", pubDir, "add"}, args...)...)
	}
	if r := offAdd(signed(t, v2, a)); r.code != 0 {
		t.Fatalf("offline machine at v2:\n%s", r)
	}
	v4b := signed(t, v4, b)
	if r := offAdd(v4b); r.code != 1 || !strings.Contains(r.stderr, "which no configured publisher has") {
		t.Errorf("v4 signed with B before the offline machine knows B:\n%s", r)
	}
	if r := off.pluginsCmd(env, "--publishers-dir", pubDir, "keys", "update", step2); r.code != 1 || !strings.Contains(r.stderr, "not signed by any current key") {
		t.Errorf("step 2 before step 1:\n%s", r)
	}
	for _, step := range []string{step1, step2} {
		if r := off.pluginsCmd(env, "--publishers-dir", pubDir, "keys", "update", step); r.code != 0 {
			t.Fatalf("offline machine, keys update %s:\n%s", step, r)
		}
	}
	if r := offAdd(v4b); r.code != 0 {
		t.Errorf("v4 signed with B once the offline machine caught up:\n%s", r)
	}
	if r := off.pluginsCmd(env, "--publishers-dir", pubDir, "keys"); !strings.Contains(r.stdout, "acme       2        "+trust.KeyID(b.pub.ID())) {
		t.Errorf("plugins keys:\n%s", r)
	}
	// A revoked key: a build only it signed is no longer trusted at the next start.
	revoked := publishers(t, "acme", "plugins: procs\nrevoked: "+trust.KeyID(a.pub.ID())+"\n", a)
	only := newWorld(t, tagsBin)
	if r := only.pluginsCmd(env, "--publishers-dir", pubDir, "add", signed(t, v1, a)); r.code != 0 {
		t.Fatalf("v1 signed with A:\n%s", r)
	}
	r = runAgent(t, env, "--plugin-dir", only.pluginDir, "--data-dir", only.dataDir, "--publishers-dir", revoked, "exec", "procs", "version")
	if r.code != 1 || !strings.Contains(r.stdout, "no longer trusted: every key that signed it ("+trust.KeyID(a.pub.ID())+") is revoked by publisher acme") {
		t.Errorf("a build signed by a revoked key:\n%s", r)
	}
}

// streamer sends commands to the connected agent and checks their answers: every id
// answered once, SUCCESS, with the version that answered.
type streamer struct {
	f       *fleet
	mu      sync.Mutex
	sent    map[string]time.Time
	took    map[string]time.Duration
	version map[string]string
	at      map[string]time.Time // when the answer came
	errs    []string
}

func newStreamer(f *fleet) *streamer {
	return &streamer{f: f, sent: map[string]time.Time{}, took: map[string]time.Duration{}, version: map[string]string{}, at: map[string]time.Time{}}
}

// run sends commands, `workers` at a time, each waiting for its answer: at least n,
// and on until more() says no (nil: exactly n).
func (s *streamer) run(ctx context.Context, prefix string, n, workers int, more func() bool) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				s.one(ctx, fmt.Sprintf("%s-%d", prefix, i))
			}
		}()
	}
	for i := 0; i < n || (more != nil && more() && ctx.Err() == nil); i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

func (s *streamer) one(ctx context.Context, id string) {
	start := time.Now()
	s.mu.Lock()
	s.sent[id] = start
	s.mu.Unlock()
	res, err := s.f.srv.Do(ctx, &agentv1.CommandRequest{CommandId: id, Plugin: "procs", Action: "version"})
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.errs = append(s.errs, fmt.Sprintf("%s: %v", id, err))
		return
	}
	s.took[id], s.at[id] = now.Sub(start), now
	if res.Terminal.GetStatus() != agentv1.CommandResponse_SUCCESS || len(res.Rows) != 1 || !strings.HasPrefix(res.Rows[0], "version|") {
		s.errs = append(s.errs, fmt.Sprintf("%s: %s %q", id, res.Terminal.GetStatus(), res.Rows))
		return
	}
	s.version[id] = strings.Split(res.Rows[0], "|")[1]
}

// check counts the terminal answers of every id at the server: one each.
func (s *streamer) check(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.errs {
		t.Error(e)
	}
	lost, doubled := 0, 0
	for id := range s.sent {
		switch n := s.f.srv.Result(id).Terminals; {
		case n == 0:
			lost++
		case n > 1:
			doubled++
		}
	}
	if lost+doubled > 0 {
		t.Errorf("%d of %d commands lost, %d doubled", lost, len(s.sent), doubled)
	}
}

// medianDuration is the median of ds (sorted in place).
func medianDuration(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// upgradeFleet is a fleet server with one `run` agent whose plugin dir holds tags and
// procs 1.0.0, started with HOME in the test's own directory.
func upgradeFleet(t *testing.T) (*fleet, []string, *agentProc) {
	t.Helper()
	f := newFleet(t, fleetserver.Options{}, tagsBin)
	env := homeEnv(t)
	if r := f.w.pluginsCmd(env, "add", procs(t, "1.0.0", "")); r.code != 0 {
		t.Fatalf("plugins add v1:\n%s", r)
	}
	a := startAgentEnv(t, env, f.args()...)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if err := f.srv.WaitSubscribed(ctx); err != nil {
		t.Fatalf("the agent did not subscribe: %v\n%s", err, a.stderr.String())
	}
	return f, env, a
}

// TestUpgradeUnderRun: plugins add of new builds while `run` serves a stream of
// commands: the running agent takes each at once (plugins add says so), new commands
// reach the new build within 5 s, and of 1,000 commands none is lost or answered twice
// (counted at the server). The log has the time from each catalog change to the first
// answer of the new build, and the command latency before and during the upgrades.
func TestUpgradeUnderRun(t *testing.T) {
	t.Parallel()
	f, env, a := upgradeFleet(t)
	versions := []string{"2.0.0", "2.1.0", "2.2.0", "2.3.0"}
	builds := make([]string, len(versions))
	for i, v := range versions {
		builds[i] = procs(t, v, "") // built before the clock runs
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := newStreamer(f)
	s.run(ctx, "before", 100, 4, nil)
	// The stream goes on while the upgrades run, and is at least 1,000 commands.
	var upgrading atomic.Bool
	upgrading.Store(true)
	streamDone := make(chan struct{})
	go func() {
		defer close(streamDone)
		s.run(ctx, "during", 900, 4, upgrading.Load)
	}()
	var firstAnswer []time.Duration
	var windows [][2]time.Time
	for i, v := range versions {
		time.Sleep(300 * time.Millisecond)
		changed := time.Now()
		r := f.w.pluginsCmd(env, "add", builds[i])
		took := time.Since(changed)
		if r.code != 0 || !strings.Contains(r.stdout, "running agent: procs "+v+" (sha256 ") {
			t.Fatalf("plugins add %s under run:\n%s\n%s", v, r, a.stderr.String())
		}
		if took > 5*time.Second {
			t.Errorf("plugins add %s took %s until the running agent ran it", v, took)
		}
		// The first answer of the new build, at the server.
		deadline := changed.Add(5 * time.Second)
		var first time.Time
		for first.IsZero() && time.Now().Before(deadline.Add(time.Second)) {
			s.mu.Lock()
			for id, ver := range s.version {
				if ver == v && (first.IsZero() || s.at[id].Before(first)) {
					first = s.at[id]
				}
			}
			s.mu.Unlock()
			if first.IsZero() {
				time.Sleep(10 * time.Millisecond)
			}
		}
		if first.IsZero() || first.After(deadline) {
			t.Fatalf("no answer from %s within 5 s of its catalog change", v)
		}
		firstAnswer = append(firstAnswer, first.Sub(changed))
		windows = append(windows, [2]time.Time{changed, changed.Add(took)})
	}
	upgrading.Store(false)
	<-streamDone
	s.check(t)
	// Latency before the upgrades, and of commands sent during one.
	var before, during []time.Duration
	s.mu.Lock()
	for id, d := range s.took {
		if strings.HasPrefix(id, "before-") {
			before = append(before, d)
			continue
		}
		for _, w := range windows {
			if !s.sent[id].Before(w[0]) && !s.sent[id].After(w[1]) {
				during = append(during, d)
			}
		}
	}
	n := len(s.sent)
	s.mu.Unlock()
	if n < 1000 {
		t.Errorf("%d commands sent, want at least 1000", n)
	}
	t.Logf("%d commands; catalog change to the new build's first answer: %v (median %v); command latency median before %v (%d), during an upgrade %v (%d)",
		n, firstAnswer, medianDuration(slices.Clone(firstAnswer)), medianDuration(before), len(before), medianDuration(during), len(during))
	if r := runAgent(t, env, "--data-dir", f.w.dataDir, "status"); !regexp.MustCompile(`(?m)^procs +2\.3\.0 +unsigned +\S+ +\S+ +0 +0 `).MatchString(r.stdout) {
		t.Errorf("status after the upgrades:\n%s", r)
	}
}

// TestUpgradeRollsBackUnderRun: new builds that pass their trial start but then fail
// under the running agent are rolled back to the build before, which kept serving:
// one that exits at its next starts, one that hangs in Describe (stopped after its
// handshake), and one that crashes three times within a minute. Each is back on the
// previous build within 30 s, says why in status and in plugins add, and is not
// installed again.
func TestUpgradeRollsBackUnderRun(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ mode, why string }{
		{"later-exit", "did not start"},
		{"later-hang", "did not start"},
		{"crash", "crashed 3 times within 60s"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			f, env, a := upgradeFleet(t)
			bad := procs(t, "2.0.0", c.mode)
			badSum := procsSum(t, bad)
			v1 := "1.0.0 (sha256 " + procsSum(t, procs(t, "1.0.0", ""))[:12] + ")"
			start := time.Now()
			r := f.w.pluginsCmd(env, "add", bad)
			if c.mode != "crash" {
				// The running agent tried it beside the old child and went back.
				if r.code != 1 || !strings.Contains(r.stdout, "running agent: procs rolled back to "+v1+": the new build 2.0.0 (sha256 "+badSum[:12]+") did not start") {
					t.Fatalf("plugins add of a build that fails under run:\n%s\n%s", r, a.stderr.String())
				}
			} else if r.code != 0 {
				t.Fatalf("plugins add of a build that crashes later:\n%s", r)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var st string
			for {
				st = runAgent(t, env, "--data-dir", f.w.dataDir, "status").stdout
				if regexp.MustCompile(`(?m)^procs +1\.0\.0 +unsigned +\S+ +\S+ +\d+ +1 +rolled back from 2\.0\.0 \(sha256 ` + badSum[:12] + `\): .*` + c.why).MatchString(st) {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("not back on 1.0.0 within 30 s:\n%s\n%s", st, a.stderr.String())
				}
				time.Sleep(200 * time.Millisecond)
			}
			t.Logf("back on 1.0.0 %s after plugins add", time.Since(start).Round(time.Millisecond))
			res, err := f.srv.Do(ctx, &agentv1.CommandRequest{CommandId: "after-" + c.mode, Plugin: "procs", Action: "version"})
			if err != nil || len(res.Rows) != 1 || !strings.HasPrefix(res.Rows[0], "version|1.0.0|") {
				t.Errorf("after the rollback: %v %q", err, res.Rows)
			}
			// The catalog says so, and the build is not installed again.
			var e *trust.Entry
			for e = readCatalog(t, f.w.pluginDir).Entry("procs"); len(e.Rejected) == 0 && ctx.Err() == nil; e = readCatalog(t, f.w.pluginDir).Entry("procs") {
				time.Sleep(50 * time.Millisecond)
			}
			if e.Version != "1.0.0" || len(e.Rejected) != 1 || e.Rejected[0].SHA256 != badSum || !strings.Contains(e.Rejected[0].Reason, c.why) {
				t.Errorf("catalog after the rollback: %+v", e)
			}
			if r := f.w.pluginsCmd(env, "add", bad); r.code != 1 || !strings.Contains(r.stderr, "this build was rolled back on") {
				t.Errorf("the rolled-back build again:\n%s", r)
			}
			if !strings.Contains(a.stderr.String(), "plugin rolled back to its previous build: plugin=procs") {
				t.Errorf("no log line for the rollback:\n%s", a.stderr.String())
			}
		})
	}
}
