package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/agent/trust"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
)

// buildEntry writes a build of the fake plugin into the store of dir and returns its
// catalog entry; the bytes only differ by version (the fake launcher runs none).
func buildEntry(t *testing.T, dir, version string) *trust.Entry {
	t.Helper()
	data := []byte("fake build " + version)
	sum := sha256.Sum256(data)
	hexSum := hex.EncodeToString(sum[:])
	file := trust.StorePath("fake", hexSum, hostOS)
	path := filepath.Join(dir, filepath.FromSlash(file))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return &trust.Entry{File: file, SHA256: hexSum, Version: version}
}

// install makes a build of the given version the catalog's current one (the one it
// replaces kept as previous) and reloads.
func install(t *testing.T, s *Supervisor, version string) []Change {
	t.Helper()
	dir := s.opts.PluginDir
	cat, err := trust.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	cat.Put("fake", buildEntry(t, dir, version))
	if err := cat.Save(dir); err != nil {
		t.Fatal(err)
	}
	changes, err := s.Reload()
	if err != nil {
		t.Fatal(err)
	}
	return changes
}

// upgradeSupervisor is a supervisor whose fake plugin runs version 1.0.0 from the
// store, with its rollbacks recorded rather than written.
func upgradeSupervisor(t *testing.T, l *fakeLauncher, opts Options) (*Supervisor, *rollbackLog) {
	t.Helper()
	rl := &rollbackLog{}
	opts.OnRollback = rl.record
	s := newTestSupervisor(t, l, opts)
	install(t, s, "1.0.0")
	return s, rl
}

type rollbackLog struct {
	mu   sync.Mutex
	seen []string
}

func (r *rollbackLog) record(plugin string, from, to Binary, reason string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, fmt.Sprintf("%s %s -> %s: %s", plugin, from.Version, to.Version, reason))
	return nil
}

func (r *rollbackLog) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// waitFor polls cond until it holds or 5 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %+v", what, nil)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func runningVersion(s *Supervisor) (string, int) {
	st := s.Status()[0]
	if st.State != StateRunning {
		return "", 0
	}
	return st.Version, st.Pid
}

// An upgrade under a running plugin: the old child keeps the command it holds to its
// end while the new one starts; new commands go to the new child once it is up; the
// old child is stopped when its command is done.
func TestUpgradeBlueGreen(t *testing.T) {
	l := &fakeLauncher{}
	gate := make(chan struct{})
	l.hold = func(b Binary) <-chan struct{} {
		if b.Version == "2.0.0" {
			return gate
		}
		return closedChan
	}
	s, _ := upgradeSupervisor(t, l, Options{})
	if _, _, err := run(s, "ok", "a", time.Second); err != nil {
		t.Fatal(err)
	}
	old := l.last()
	ctx, cancel := context.WithCancel(context.Background())
	held := make(chan error, 1)
	go func() {
		_, err := s.Execute(ctx, Request{Plugin: "fake", Command: host.Command{Action: "hang"}, Timeout: time.Minute}, func([]string) error { return nil })
		held <- err
	}()
	time.Sleep(20 * time.Millisecond)

	upgrades := s.Status()[0].Upgrades
	changes := install(t, s, "2.0.0")
	if len(changes) != 1 || changes[0].Kind != "upgraded" || !strings.HasPrefix(changes[0].To, "2.0.0 (sha256 ") {
		t.Fatalf("changes %+v", changes)
	}
	// While the new build starts, commands still go to the old child, at once.
	waitFor(t, "the new build starting", func() bool { return s.Status()[0].Upgrading })
	if rows, _, err := run(s, "ok", "during", time.Second); err != nil || rows != "ok|during" {
		t.Fatalf("a command during the upgrade: %q %v", rows, err)
	}
	if v, pid := runningVersion(s); v != "1.0.0" || pid != old.pid {
		t.Errorf("during the upgrade the running child is %s pid %d", v, pid)
	}
	close(gate)
	waitFor(t, "2.0.0 running", func() bool { v, _ := runningVersion(s); return v == "2.0.0" })
	st := s.Status()[0]
	if st.Upgrades != upgrades+1 || !st.Probation || st.Build != changes[0].To {
		t.Errorf("status after the upgrade: %+v", st)
	}
	if _, _, err := run(s, "ok", "after", time.Second); err != nil {
		t.Fatal(err)
	}
	// The old child is still there for the command it holds, and goes with it.
	if !old.alive() {
		t.Fatal("the old child was stopped with a command in flight")
	}
	cancel()
	if err := <-held; !errors.Is(err, context.Canceled) {
		t.Errorf("the held command ended with %v, want its cancellation (not a crash)", err)
	}
	waitFor(t, "the old child to stop", func() bool { return !old.alive() })
	if st := s.Status()[0]; st.Restarts != 0 {
		t.Errorf("the old child's stop counted as a failure: %+v", st)
	}
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// A new build that fails to start is rolled back at once; the running child (of the
// previous build) never stopped serving; the rollback is recorded and the build is
// not started again when the catalog names it once more.
func TestUpgradeRollsBackAFailedStart(t *testing.T) {
	l := &fakeLauncher{failBuild: func(b Binary) error {
		if b.Version == "2.0.0" {
			return &StartError{Plugin: "fake", Err: errors.New("exit status 1")}
		}
		return nil
	}}
	s, rl := upgradeSupervisor(t, l, Options{})
	if _, _, err := run(s, "ok", "", time.Second); err != nil {
		t.Fatal(err)
	}
	old := l.last()
	install(t, s, "2.0.0")
	waitFor(t, "the rollback", func() bool { return s.Status()[0].Rollbacks == 1 })
	st := s.Status()[0]
	if st.State != StateRunning || st.Pid != old.pid || st.Version != "1.0.0" || !strings.HasPrefix(st.Build, "1.0.0 ") ||
		!strings.Contains(st.LastRollback, "the new build 2.0.0") || !strings.Contains(st.LastRollback, "exit status 1") {
		t.Errorf("after the rollback: %+v", st)
	}
	waitFor(t, "the rollback to be recorded", func() bool { return len(rl.all()) == 1 })
	if got := rl.all()[0]; !strings.HasPrefix(got, "fake 2.0.0 -> 1.0.0: the new build 2.0.0") {
		t.Errorf("recorded %q", got)
	}
	starts := len(l.startTimes())
	// The catalog still names 2.0.0 (the record was only logged here): no retry.
	if _, err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(l.startTimes()); n != starts {
		t.Errorf("%d more starts after a reload naming the rolled-back build", n-starts)
	}
	if rows, _, err := run(s, "ok", "x", time.Second); err != nil || rows != "ok|x" {
		t.Errorf("after the rollback: %q %v", rows, err)
	}
}

// A new build whose start runs out of time is tried once more (a busy machine is no
// reason to give up), and rolled back the second time.
func TestUpgradeSlowStartRetriedThenRolledBack(t *testing.T) {
	l := &fakeLauncher{}
	never := make(chan struct{})
	l.hold = func(b Binary) <-chan struct{} {
		if b.Version == "2.0.0" {
			return never
		}
		return closedChan
	}
	s, _ := upgradeSupervisor(t, l, Options{StartTimeout: 100 * time.Millisecond})
	if _, _, err := run(s, "ok", "", time.Second); err != nil {
		t.Fatal(err)
	}
	before := len(l.startTimes())
	install(t, s, "2.0.0")
	waitFor(t, "the rollback", func() bool { return s.Status()[0].Rollbacks == 1 })
	if n := len(l.startTimes()) - before; n != 2 {
		t.Errorf("%d starts of 2.0.0, want 2", n)
	}
	if v, _ := runningVersion(s); v != "1.0.0" {
		t.Errorf("running %q after the rollback", v)
	}
}

// A new build that starts but crashes three times within a minute is rolled back; two
// crashes are only restarts.
func TestUpgradeRollsBackOnCrashes(t *testing.T) {
	l := &fakeLauncher{}
	s, rl := upgradeSupervisor(t, l, Options{RestartBudget: 10})
	if _, _, err := run(s, "ok", "", time.Second); err != nil {
		t.Fatal(err)
	}
	install(t, s, "2.0.0")
	waitFor(t, "2.0.0 running", func() bool { v, _ := runningVersion(s); return v == "2.0.0" })
	for i := range 3 {
		if _, _, err := run(s, "crash", "", time.Second); err == nil {
			t.Fatalf("crash %d: no error", i)
		}
		if i < 2 {
			waitFor(t, "a restart of 2.0.0", func() bool { v, _ := runningVersion(s); return v == "2.0.0" })
			if s.Status()[0].Rollbacks != 0 {
				t.Fatalf("rolled back after %d crashes", i+1)
			}
		}
	}
	waitFor(t, "1.0.0 running again", func() bool { v, _ := runningVersion(s); return v == "1.0.0" })
	st := s.Status()[0]
	if st.Rollbacks != 1 || !strings.Contains(st.LastRollback, "crashed 3 times within 60s") || st.Probation {
		t.Errorf("after the rollback: %+v", st)
	}
	waitFor(t, "the record", func() bool { return len(rl.all()) == 1 })
	// No rollback of a rollback: 1.0.0 crashing meets the restart budget, nothing else.
	for range 3 {
		_, _, _ = run(s, "crash", "", time.Second)
		waitFor(t, "a restart", func() bool { st := s.Status()[0]; return st.State == StateRunning || st.State == StateFailed })
	}
	if n := len(rl.all()); n != 1 {
		t.Errorf("%d rollbacks recorded, want 1", n)
	}
}

// A build that says another version than the catalog's is refused, and rolled back.
func TestUpgradeRefusesAWrongVersion(t *testing.T) {
	l := &fakeLauncher{}
	s, _ := upgradeSupervisor(t, l, Options{})
	if _, _, err := run(s, "ok", "", time.Second); err != nil {
		t.Fatal(err)
	}
	l.failBuild = nil
	// The catalog says 2.0.0, the build says 1.9.0.
	dir := s.opts.PluginDir
	cat, _ := trust.Load(dir)
	e := buildEntry(t, dir, "2.0.0")
	cat.Put("fake", e)
	cat.Save(dir)
	l.mu.Lock()
	l.failBuild = nil
	l.mu.Unlock()
	lie := &lyingLauncher{fakeLauncher: l, says: "1.9.0"}
	s.launcher = lie
	if _, err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rollback", func() bool { return s.Status()[0].Rollbacks == 1 })
	if st := s.Status()[0]; !strings.Contains(st.LastRollback, `it says it is version "1.9.0", the catalog says "2.0.0"`) {
		t.Errorf("reason %q", st.LastRollback)
	}
}

// lyingLauncher starts children that all say one version.
type lyingLauncher struct {
	*fakeLauncher
	says string
}

func (l *lyingLauncher) Launch(ctx context.Context, b Binary, cfg sdk.Config) (Child, error) {
	c, err := l.fakeLauncher.Launch(ctx, b, cfg)
	if err == nil {
		c.(*fakeChild).version = l.says
	}
	return c, err
}

// Upgrading a plugin that is not running starts the new build at once, so that a
// build that cannot start is found (and rolled back) before a command needs it.
func TestUpgradeOfAStoppedPluginStartsIt(t *testing.T) {
	l := &fakeLauncher{}
	s, _ := upgradeSupervisor(t, l, Options{})
	install(t, s, "2.0.0")
	waitFor(t, "2.0.0 running", func() bool { v, _ := runningVersion(s); return v == "2.0.0" })
}

// A plugin the catalog no longer names finishes the command it holds, refuses new
// ones as unknown, and is gone from the list.
func TestRemoveDrains(t *testing.T) {
	l := &fakeLauncher{}
	s, _ := upgradeSupervisor(t, l, Options{})
	if _, _, err := run(s, "ok", "", time.Second); err != nil {
		t.Fatal(err)
	}
	child := l.last()
	ctx, cancel := context.WithCancel(context.Background())
	held := make(chan error, 1)
	go func() {
		_, err := s.Execute(ctx, Request{Plugin: "fake", Command: host.Command{Action: "hang"}, Timeout: time.Minute}, func([]string) error { return nil })
		held <- err
	}()
	time.Sleep(20 * time.Millisecond)
	dir := s.opts.PluginDir
	cat, _ := trust.Load(dir)
	cat.Remove("fake")
	cat.Save(dir)
	top := BinaryPrefix + "fake" // the test's top-level file
	if hostOS == "windows" {
		top += ".exe"
	}
	os.Remove(filepath.Join(dir, top))
	changes, err := s.Reload()
	if err != nil || len(changes) != 1 || changes[0].Kind != "removed" {
		t.Fatalf("changes %+v %v", changes, err)
	}
	if _, _, err := run(s, "ok", "", time.Second); !errors.Is(err, ErrUnknownPlugin) {
		t.Errorf("a command after the removal: %v", err)
	}
	if len(s.Plugins()) != 0 {
		t.Errorf("plugins %v after the removal", s.Plugins())
	}
	if !child.alive() {
		t.Fatal("the child was stopped with a command in flight")
	}
	cancel()
	<-held
	waitFor(t, "the child to stop", func() bool { return !child.alive() })
}

// A build the catalog stops trusting (its key revoked, here: built for another
// system) is refused: the child finishes and stops, commands get the refusal.
func TestUpgradeToARefusedBuild(t *testing.T) {
	l := &fakeLauncher{}
	s, _ := upgradeSupervisor(t, l, Options{})
	if _, _, err := run(s, "ok", "", time.Second); err != nil {
		t.Fatal(err)
	}
	child := l.last()
	dir := s.opts.PluginDir
	cat, _ := trust.Load(dir)
	e := buildEntry(t, dir, "2.0.0")
	e.OS, e.Arch = "plan9", "mips"
	cat.Put("fake", e)
	cat.Save(dir)
	if _, err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, StateRefused)
	_, _, err := run(s, "ok", "", time.Second)
	var refused *RefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "built for plan9/mips") {
		t.Errorf("a command for a refused build: %v", err)
	}
	waitFor(t, "the child to stop", func() bool { return !child.alive() })
	// A good build again starts it.
	install(t, s, "3.0.0")
	waitFor(t, "3.0.0 running", func() bool { v, _ := runningVersion(s); return v == "3.0.0" })
}

// Watch picks up a catalog written by another process.
func TestWatchReloads(t *testing.T) {
	l := &fakeLauncher{}
	s, _ := upgradeSupervisor(t, l, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Watch(ctx, 10*time.Millisecond)
	dir := s.opts.PluginDir
	cat, _ := trust.Load(dir)
	cat.Put("fake", buildEntry(t, dir, "2.0.0"))
	time.Sleep(20 * time.Millisecond)
	cat.Save(dir)
	waitFor(t, "2.0.0 running", func() bool { v, _ := runningVersion(s); return v == "2.0.0" })
}
