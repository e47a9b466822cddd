//go:build linux

package integration

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"aead.dev/minisign"

	"github.com/yuzugo/yuzu/agent/update"
	"github.com/yuzugo/yuzu/integration/fleetserver"
)

// The agent's self-update (docs/fleet.md "Updating the agent"), run from an install
// tree as a package lays it out, under a stand-in for systemd: it runs the guard with
// the first version's binary (the package's own) before every start, starts what
// current names with $NOTIFY_SOCKET, kills a start that is not ready within its
// timeout (Type=notify, TimeoutStartSec) and restarts whatever ends (Restart=always).
// The package leg runs the same under real systemd in QEMU.

// agentBuild is one build of the agent at a version, built once per run.
type agentBuild struct {
	once sync.Once
	path string
	err  error
}

var agentBuilds sync.Map // version -> *agentBuild

// agentAt builds the agent stamped with version.
func agentAt(t testing.TB, version string) string {
	t.Helper()
	if built.root == "" {
		t.Skip("agent versions are built in the test: it needs the repository")
	}
	v, _ := agentBuilds.LoadOrStore(version, &agentBuild{})
	b := v.(*agentBuild)
	b.once.Do(func() {
		dir := filepath.Join(built.binDir, "agent-"+version)
		if b.err = os.MkdirAll(dir, 0o755); b.err != nil {
			return
		}
		b.path = filepath.Join(dir, "yuzu-agent")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X github.com/yuzugo/yuzu/agent/internal/cli.Version="+version, "-o", b.path, "./agent/cmd/yuzu-agent")
		cmd.Dir = built.root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build agent %s: %v\n%s", version, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// releaser signs agent releases: its key is in a publishers dir, `agent: yes`.
type releaser struct {
	priv minisign.PrivateKey
	dir  string // the publishers dir
}

func newReleaser(t testing.TB) releaser {
	t.Helper()
	pub, priv, err := minisign.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "publishers")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	text, _ := pub.MarshalText()
	// A release publisher only: it may sign agent releases and no plugin.
	writeFile(t, filepath.Join(dir, "vendor.pub"), string(text)+"\nagent: yes\nplugins:\n", 0o644)
	return releaser{priv: priv, dir: dir}
}

// bundle makes a signed bundle of version holding binary as the agent.
func (r releaser) bundle(t testing.TB, version string, binary []byte) []byte {
	t.Helper()
	files := map[string][]byte{"yuzu-agent": binary}
	raw := update.MarshalIndex(update.NewIndex(version, "linux", goarch(), files, "yuzu-agent"))
	var buf bytes.Buffer
	if err := update.WriteBundle(&buf, raw, minisign.Sign(r.priv, raw), files); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func goarch() string {
	out, _ := exec.Command("go", "env", "GOARCH").Output()
	return strings.TrimSpace(string(out))
}

// publish offers payload as version on srv, for this machine.
func publish(srv *fleetserver.Server, version string, payload []byte, mutate ...func(*fleetserver.AgentBuild)) {
	b := fleetserver.AgentBuild{OS: "linux", Arch: fleetserver.PlatformArch(goarch()), Version: version, Payload: payload, Share: 100}
	for _, m := range mutate {
		m(&b)
	}
	srv.PublishAgent(b)
}

// installTree lays out <root>/<version>/yuzu-agent with current -> version, as the
// package's postinst does, and returns the tree.
func installTree(t testing.TB, version string) update.Tree {
	t.Helper()
	tree := update.Tree{Root: filepath.Join(t.TempDir(), "agent"), GOOS: "linux"}
	if err := os.MkdirAll(filepath.Join(tree.Root, version), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(agentAt(t, version), tree.Binary(version), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(version, filepath.Join(tree.Root, update.CurrentLink)); err != nil {
		t.Fatal(err)
	}
	return tree
}

// service stands in for systemd running the agent's unit.
type service struct {
	t     testing.TB
	tree  update.Tree
	guard string   // the package's binary, which runs the guard
	args  []string // the agent's arguments (run and its flags)
	data  string   // the data dir (for the guard)
	start time.Duration

	mu      sync.Mutex
	log     bytes.Buffer // every start's output, and the guard's
	starts  []string     // the version each start ran
	current *exec.Cmd
	stop    chan struct{}
	done    chan struct{}
}

// newService starts the stand-in; it runs until the test ends.
func newService(t testing.TB, tree update.Tree, guard, data string, startTimeout time.Duration, args ...string) *service {
	t.Helper()
	s := &service{t: t, tree: tree, guard: guard, data: data, args: args, start: startTimeout, stop: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	t.Cleanup(s.close)
	return s
}

func (s *service) logf(format string, args ...any) {
	s.mu.Lock()
	fmt.Fprintf(&s.log, format+"\n", args...)
	s.mu.Unlock()
}

func (s *service) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

func (s *service) Starts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.starts...)
}

func (s *service) close() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.mu.Lock()
	if c := s.current; c != nil && c.Process != nil {
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	s.mu.Unlock()
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.mu.Lock()
		if c := s.current; c != nil && c.Process != nil {
			_ = c.Process.Kill()
		}
		s.mu.Unlock()
		<-s.done
	}
	if s.t.Failed() {
		s.t.Logf("service log:\n%s", s.Log())
	}
}

// loop is ExecStartPre=guard, ExecStart=current/yuzu-agent, Type=notify with a start
// timeout, Restart=always with a short RestartSec.
func (s *service) loop() {
	defer close(s.done)
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		out, err := exec.Command(s.guard, "--data-dir", s.data, "update", "guard", s.tree.Root).CombinedOutput()
		s.logf("guard: %s %v", strings.TrimSpace(string(out)), err)
		cur, _ := s.tree.Current()
		sock := filepath.Join(s.t.TempDir(), "notify")
		ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
		if err != nil {
			s.logf("notify socket: %v", err)
			return
		}
		ready := make(chan struct{})
		go func() {
			buf := make([]byte, 4096)
			for {
				n, err := ln.Read(buf)
				if err != nil {
					return
				}
				if strings.Contains(string(buf[:n]), "READY=1") {
					close(ready)
					return
				}
			}
		}()
		cmd := exec.Command(filepath.Join(s.tree.Root, update.CurrentLink, "yuzu-agent"), s.args...)
		cmd.Env = append(baseEnv(), "NOTIFY_SOCKET="+sock)
		w := &prefixWriter{s: s, prefix: "[" + cur + "] "}
		cmd.Stdout, cmd.Stderr = w, w
		exited := make(chan error, 1)
		s.mu.Lock()
		s.starts = append(s.starts, cur)
		err = cmd.Start()
		if err == nil {
			s.current = cmd
		}
		s.mu.Unlock()
		if err != nil {
			s.logf("start %s: %v", cur, err)
			ln.Close()
		} else {
			go func() { exited <- cmd.Wait() }()
			timeout := time.NewTimer(s.start)
			select {
			case <-ready:
				timeout.Stop()
				err := <-exited
				s.logf("%s exited: %v", cur, err)
			case err := <-exited:
				timeout.Stop()
				s.logf("%s exited before it was ready: %v", cur, err)
			case <-timeout.C:
				_ = cmd.Process.Kill()
				<-exited
				s.logf("%s was not ready within %s: killed", cur, s.start)
			}
			ln.Close()
		}
		s.mu.Lock()
		s.current = nil
		s.mu.Unlock()
		select {
		case <-s.stop:
			return
		case <-time.After(300 * time.Millisecond):
		}
	}
}

type prefixWriter struct {
	s      *service
	prefix string
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	for _, line := range strings.SplitAfter(string(p), "\n") {
		if line != "" {
			w.s.log.WriteString(w.prefix + line)
		}
	}
	return len(p), nil
}

// updateFleet is a fleet server, a release key, an install tree at v1 and the
// service running it.
type updateFleet struct {
	*fleet
	rel          releaser
	tree         update.Tree
	svc          *service
	v1           string
	args         []string
	startTimeout time.Duration
}

// newUpdateFleet installs v1; start starts its service. The agent checks for an update
// within a second of registering, then again after each reconnect.
func newUpdateFleet(t *testing.T, v1 string, startTimeout time.Duration) *updateFleet {
	t.Helper()
	f := newFleet(t, fleetserver.Options{})
	rel := newReleaser(t)
	tree := installTree(t, v1)
	args := []string{"--plugin-dir", f.w.pluginDir, "--data-dir", f.w.dataDir, "--publishers-dir", rel.dir, "run",
		"--server", f.srv.Addr(), "--ca-cert", f.pki.CA, "--client-cert", f.pki.ClientCert, "--client-key", f.pki.ClientKey,
		"--update-splay", "1s", "--heartbeat", "2s"}
	u := &updateFleet{fleet: f, rel: rel, tree: tree, v1: v1, args: args, startTimeout: startTimeout}
	return u
}

// start starts the service.
func (u *updateFleet) start(t *testing.T) {
	t.Helper()
	u.svc = newService(t, u.tree, agentAt(t, u.v1), u.w.dataDir, u.startTimeout, u.args...)
}

// waitVersion waits until the agent has registered running version.
func (u *updateFleet) waitVersion(t *testing.T, version string, within time.Duration) {
	t.Helper()
	waitFor(t, within, "a registration as "+version, func() bool {
		regs := u.srv.Registrations()
		return len(regs) > 0 && regs[len(regs)-1].GetInfo().GetAgentVersion() == version && len(u.svc.Starts()) > 0
	})
}

// TestSelfUpdate: an agent running 0.9.0 from its install tree is offered 1.0.0, a
// bundle signed by the release key: it downloads it, stages it in the tree, runs its
// self-check, switches and exits; the guard lets 1.0.0 start on trial, it registers
// as 1.0.0, and its trial passes (the guard keeps it at the next start).
func TestSelfUpdate(t *testing.T) {
	t.Parallel()
	u := newUpdateFleet(t, "0.9.0", 60*time.Second)
	publish(u.srv, "1.0.0", u.rel.bundle(t, "1.0.0", readBytes(t, agentAt(t, "1.0.0"))))
	u.start(t)
	u.waitVersion(t, "1.0.0", 90*time.Second)
	if regs := u.srv.Registrations(); regs[0].GetInfo().GetAgentVersion() != "0.9.0" {
		t.Errorf("the first registration was %s", regs[0].GetInfo().GetAgentVersion())
	}
	ctx := testCtx(t, 60*time.Second)
	if err := u.srv.WaitSubscribed(ctx); err != nil {
		t.Fatal(err)
	}
	if cur, _ := u.tree.Current(); cur != "1.0.0" {
		t.Errorf("current is %s", cur)
	}
	if prev, _ := u.tree.Previous(); prev != "0.9.0" {
		t.Errorf("previous is %s", prev)
	}
	// The trial passes just after the registration the wait above saw; the
	// line reaches the service log a moment later.
	waitFor(t, 30*time.Second, "the end of the trial", func() bool { return strings.Contains(u.svc.Log(), "this version passed its trial") })
	log := u.svc.Log()
	for _, want := range []string{"guard: update guard: 1.0.0 starts on trial (switched from 0.9.0", "exited: exit status 75"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	st := runAgent(t, nil, "--data-dir", u.w.dataDir, "status")
	if !strings.Contains(st.stdout, "update:      running 1.0.0") {
		t.Errorf("status after the update:\n%s", st)
	}
}

// TestSelfUpdateRollsBack: a 1.0.0 that exits 1 at start, and one that hangs before
// registering, are replaced by 0.9.0 by the guard (the package's binary) within the
// start timeout and a restart; 1.0.0 is not tried again while the server offers it,
// and status shows the rollback.
func TestSelfUpdateRollsBack(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, run string }{
		{"exits 1", "exit 1"},
		{"hangs", "exec sleep 3600"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			u := newUpdateFleet(t, "0.9.0", 15*time.Second)
			// A build that passes the self-check and fails at run.
			script := "#!/bin/sh\nfor a; do if [ \"$a\" = self-check ]; then echo self-check passed; exit 0; fi; done\n" + c.run + "\n"
			publish(u.srv, "1.0.0", u.rel.bundle(t, "1.0.0", []byte(script)))
			start := time.Now()
			u.start(t)
			waitFor(t, 90*time.Second, "the rollback", func() bool { return strings.Contains(u.svc.Log(), "rolled back from 1.0.0 to 0.9.0") })
			t.Logf("%s: rolled back %s after the offer", c.name, time.Since(start).Round(time.Millisecond))
			u.waitVersion(t, "0.9.0", 60*time.Second)
			// Offered again (the server restarts, the agent checks after its
			// reconnect): not taken.
			checks := len(u.srv.UpdateChecks())
			u.srv.Stop()
			if err := u.srv.Restart(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 60*time.Second, "a check after the reconnect", func() bool { return len(u.srv.UpdateChecks()) > checks })
			waitFor(t, 30*time.Second, "the refusal of a version rolled back", func() bool {
				return strings.Contains(u.svc.Log(), "was rolled back before")
			})
			if starts := u.svc.Starts(); strings.Count(strings.Join(starts, " "), "1.0.0") != 1 {
				t.Errorf("1.0.0 started %v: want once", starts)
			}
			if cur, _ := u.tree.Current(); cur != "0.9.0" {
				t.Errorf("current is %s", cur)
			}
			st := runAgent(t, nil, "--data-dir", u.w.dataDir, "status")
			if !strings.Contains(st.stdout, "rollback:    1.0.0 -> 0.9.0 at ") {
				t.Errorf("status after the rollback:\n%s", st)
			}
		})
	}
}

// TestSelfUpdateRefusals: with 0.9.0 serving, each of these is refused, logged once,
// and 0.9.0 goes on answering: a chunk altered in flight, a bundle signed by an
// unknown key, a bare binary, a signed downgrade (below the version floor).
func TestSelfUpdateRefusals(t *testing.T) {
	t.Parallel()
	stranger := newReleaser(t)
	cases := []struct {
		name, version, want string
		payload             func(u *updateFleet) []byte
		mutate              func(*fleetserver.AgentBuild)
		floor               string
	}{
		{"altered in flight", "1.0.0", "altered in flight", func(u *updateFleet) []byte { return u.rel.bundle(t, "1.0.0", []byte("#!/bin/sh\n")) },
			func(b *fleetserver.AgentBuild) { b.Corrupt = true }, ""},
		{"unknown key", "1.0.0", "which no configured publisher has", func(u *updateFleet) []byte { return stranger.bundle(t, "1.0.0", []byte("#!/bin/sh\n")) }, nil, ""},
		{"bare binary", "1.0.0", "not a signed yuzu-agent bundle", func(u *updateFleet) []byte { return readBytes(t, agentAt(t, "1.0.0")) }, nil, ""},
		{"signed downgrade", "0.9.5", "below the agent's version floor 1.0.0", func(u *updateFleet) []byte { return u.rel.bundle(t, "0.9.5", []byte("#!/bin/sh\n")) }, nil, "1.0.0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			u := newUpdateFleet(t, "0.9.0", 60*time.Second)
			if c.floor != "" {
				// 1.0.0 ran here once, and the operator went back by hand: the
				// floor stays.
				if err := os.MkdirAll(filepath.Join(u.w.dataDir, "trust"), 0o700); err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(u.w.dataDir, "trust", "floors.json"), `{"yuzu-agent":"`+c.floor+`"}`, 0o600)
			}
			var mutate []func(*fleetserver.AgentBuild)
			if c.mutate != nil {
				mutate = append(mutate, c.mutate)
			}
			publish(u.srv, c.version, c.payload(u), mutate...)
			u.start(t)
			waitFor(t, 60*time.Second, "the refusal", func() bool { return strings.Contains(u.svc.Log(), c.want) })
			ctx := testCtx(t, 60*time.Second)
			if err := u.srv.WaitSubscribed(ctx); err != nil {
				t.Fatal(err)
			}
			r, err := u.srv.Do(ctx, command("still-"+strings.ReplaceAll(c.name, " ", "-"), "yuzu.agent", "nosuch"))
			if err != nil || r.Terminal == nil {
				t.Fatalf("0.9.0 does not answer after the refusal: %v", err)
			}
			// The server restarts: the agent reconnects, checks again after the
			// splay, and is refused again without saying so again.
			checks := len(u.srv.UpdateChecks())
			u.srv.Stop()
			if err := u.srv.Restart(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 60*time.Second, "a check after the reconnect", func() bool { return len(u.srv.UpdateChecks()) > checks })
			time.Sleep(time.Second)
			if cur, _ := u.tree.Current(); cur != "0.9.0" {
				t.Errorf("current is %s", cur)
			}
			if n := strings.Count(u.svc.Log(), "agent update refused"); n != 1 {
				t.Errorf("the refusal was logged %d times, want once", n)
			}
		})
	}
}

func readBytes(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSelfUpdateKilled: 200 agents killed (SIGKILL) at random points of an update:
// while downloading, staging, flushing, self-checking or switching. After each, the
// guard runs as before a start, and the tree must hold a runnable agent: current names
// a version whose binary is whole and answers --version. 0 machines without one.
func TestSelfUpdateKilled(t *testing.T) {
	t.Parallel()
	const kills, workers = 200, 4
	f := newFleet(t, fleetserver.Options{})
	rel := newReleaser(t)
	v1, v2 := agentAt(t, "0.9.0"), agentAt(t, "1.0.0")
	payload := rel.bundle(t, "1.0.0", readBytes(t, v2))
	// About 200 chunks, 3 ms apart: the download is a fair share of the window.
	publish(f.srv, "1.0.0", payload, func(b *fleetserver.AgentBuild) { b.ChunkDelay = 3 * time.Millisecond })

	// One update without a kill, timed: the kills fall in 1.2 times that.
	type outcome struct{ current, phase string }
	run := func(w int, kill time.Duration) (outcome, error) {
		base := filepath.Join(t.TempDir(), fmt.Sprint("w", w))
		tree := update.Tree{Root: filepath.Join(base, "agent"), GOOS: "linux"}
		data := filepath.Join(base, "data")
		if err := os.MkdirAll(filepath.Join(tree.Root, "0.9.0"), 0o755); err != nil {
			return outcome{}, err
		}
		if err := os.Link(v1, tree.Binary("0.9.0")); err != nil {
			return outcome{}, err
		}
		if err := os.Symlink("0.9.0", filepath.Join(tree.Root, update.CurrentLink)); err != nil {
			return outcome{}, err
		}
		if err := os.MkdirAll(data, 0o755); err != nil {
			return outcome{}, err
		}
		cmd := exec.Command(filepath.Join(tree.Root, update.CurrentLink, "yuzu-agent"), "--plugin-dir", f.w.pluginDir, "--data-dir", data,
			"--publishers-dir", rel.dir, "--agent-id", fmt.Sprintf("kill-%d", w), "run", "--server", f.srv.Addr(), "--ca-cert", f.pki.CA,
			"--client-cert", f.pki.ClientCert, "--client-key", f.pki.ClientKey, "--update-splay", "1ms")
		cmd.Env = baseEnv()
		var log bytes.Buffer
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			return outcome{}, err
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		phase := "exited by itself"
		if kill > 0 {
			select {
			case <-exited:
			case <-time.After(kill):
				_ = cmd.Process.Kill()
				<-exited
				phase = "killed"
			}
		} else {
			select {
			case <-exited:
			case <-time.After(2 * time.Minute):
				_ = cmd.Process.Kill()
				<-exited
				return outcome{}, fmt.Errorf("the update did not finish in 2 minutes:\n%s", log.String())
			}
		}
		// Where the kill fell, from what it left.
		if phase == "killed" {
			entries, _ := os.ReadDir(tree.Root)
			cur, _ := tree.Current()
			phase = "killed before the download"
			for _, e := range entries {
				switch {
				case strings.HasPrefix(e.Name(), ".download-"):
					phase = "killed downloading"
				case strings.HasPrefix(e.Name(), ".staging-"):
					phase = "killed staging"
				case e.Name() == "1.0.0" && cur == "0.9.0":
					phase = "killed staged (self-check or switch)"
				case cur == "1.0.0":
					phase = "killed switched, before its exit"
				}
			}
		}
		// What a start would do next: the guard, then current's binary.
		if out, err := exec.Command(v1, "--data-dir", data, "update", "guard", tree.Root).CombinedOutput(); err != nil {
			return outcome{}, fmt.Errorf("guard: %v\n%s", err, out)
		}
		cur, err := tree.Current()
		if err != nil {
			return outcome{}, fmt.Errorf("%s: no current version: %v\n%s", phase, err, log.String())
		}
		if err := tree.Runnable(cur); err != nil {
			return outcome{}, fmt.Errorf("%s: current %s is not runnable: %v\n%s", phase, cur, err, log.String())
		}
		out, err := exec.Command(filepath.Join(tree.Root, update.CurrentLink, "yuzu-agent"), "--version").CombinedOutput()
		if err != nil || !strings.Contains(string(out), cur) {
			return outcome{}, fmt.Errorf("%s: current %s does not run: %v %q", phase, cur, err, out)
		}
		if err := os.RemoveAll(base); err != nil {
			return outcome{}, err
		}
		return outcome{current: cur, phase: phase}, nil
	}
	start := time.Now()
	o, err := run(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	window := time.Since(start)
	if o.current != "1.0.0" {
		t.Fatalf("the update without a kill ended at %s", o.current)
	}
	t.Logf("an update without a kill takes %s; kills fall in the first %s", window.Round(time.Millisecond), (window * 6 / 5).Round(time.Millisecond))

	var mu sync.Mutex
	counts := map[string]int{}
	var failures []string
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 1; w <= workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				// Half the kills anywhere in the window, half in its last part,
				// where the stage, the self-check and the switch are (the
				// download takes most of it).
				at := 1 + randomDuration(window*6/5)
				if i%2 == 1 {
					at = window*7/10 + randomDuration(window/2)
				}
				o, err := run(w*1000+i, at)
				mu.Lock()
				if err != nil {
					failures = append(failures, err.Error())
				} else {
					counts[o.phase+", current "+o.current]++
				}
				mu.Unlock()
			}
		}()
	}
	for i := range kills {
		next <- i
	}
	close(next)
	wg.Wait()
	t.Logf("%d kills: %v", kills, counts)
	if len(failures) > 0 {
		t.Errorf("%d of %d kills left no runnable agent; the first:\n%s", len(failures), kills, failures[0])
	}
}

// randomDuration is uniform in [0, max).
func randomDuration(max time.Duration) time.Duration {
	n, _ := rand.Int(rand.Reader, big.NewInt(int64(max)))
	return time.Duration(n.Int64())
}

// TestUpdateCheckSplay: 50 agents connected to the server, which restarts: each
// checks for an update after its reconnect within its splay (20 s here), spread over
// it, not at once. The histogram is logged.
func TestUpdateCheckSplay(t *testing.T) {
	t.Parallel()
	const agents = 50
	const splay = 20 * time.Second
	f := newFleet(t, fleetserver.Options{})
	for i := range agents {
		data := filepath.Join(t.TempDir(), "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			t.Fatal(err)
		}
		startAgentEnv(t, baseEnv(), "--plugin-dir", f.w.pluginDir, "--data-dir", data, "--agent-id", fmt.Sprintf("splay-%02d", i), "run",
			"--server", f.srv.Addr(), "--ca-cert", f.pki.CA, "--client-cert", f.pki.ClientCert, "--client-key", f.pki.ClientKey,
			"--update-splay", splay.String())
	}
	// Each checks once within its splay of registering.
	waitFor(t, 3*time.Minute, "every agent's first check", func() bool { return len(f.srv.UpdateChecks()) >= agents })
	f.srv.Stop()
	restart := time.Now()
	if err := f.srv.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "every agent's check after the reconnect", func() bool { return len(f.srv.CheckTimes(restart)) >= agents })
	times := f.srv.CheckTimes(restart)
	const bins = 5
	var hist [bins + 1]int
	for _, d := range times[:agents] {
		b := int(d * bins / splay)
		if b > bins {
			b = bins
		}
		hist[b]++
	}
	var lines []string
	for b := range bins {
		lines = append(lines, fmt.Sprintf("%2d-%2ds %s %d", b*int(splay.Seconds())/bins, (b+1)*int(splay.Seconds())/bins, strings.Repeat("#", hist[b]), hist[b]))
	}
	lines = append(lines, fmt.Sprintf("later  %s %d (the reconnect's own backoff, up to 2 s)", strings.Repeat("#", hist[bins]), hist[bins]))
	t.Logf("update checks of %d agents after the server restarted (splay %s):\n%s", agents, splay, strings.Join(lines, "\n"))
	if hist[0] > agents/2 {
		t.Errorf("%d of %d checks in the first fifth of the splay: not spread", hist[0], agents)
	}
	empty := 0
	for b := range bins {
		if hist[b] == 0 {
			empty++
		}
	}
	if empty > 1 {
		t.Errorf("%d fifths of the splay without a check: not spread", empty)
	}
	if last := times[agents-1]; last > splay+5*time.Second {
		t.Errorf("the last check came %s after the restart, past the splay", last)
	}
}
