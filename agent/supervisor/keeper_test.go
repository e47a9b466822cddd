package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/agent/trust"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
)

// These tests drive the state machine with a fake launcher, so they run on every
// operating system without processes; integration keeps the real-binary tests.

// fakeChild is a child that does what its action names.
type fakeChild struct {
	pid     int
	version string
	exited  chan struct{}
	once    sync.Once
	status  atomic.Pointer[string]
	pingErr atomic.Pointer[error]
	// killLag, when set, is how long a killed child takes to exit; meanwhile it is
	// dying and answers nothing, as a real process does between SIGKILL and reaping.
	killLag time.Duration
	dying   atomic.Bool
}

func newFakeChild(pid int) *fakeChild { return &fakeChild{pid: pid, exited: make(chan struct{})} }

// versionOf is the version a fake child of b says it has: the catalog's, else 1.0.0.
func versionOf(b Binary) string {
	if b.Version != "" {
		return b.Version
	}
	return "1.0.0"
}

func (c *fakeChild) end(status string) {
	c.once.Do(func() {
		c.status.Store(&status)
		close(c.exited)
	})
}

func (c *fakeChild) Manifest() host.Manifest {
	v := c.version
	if v == "" {
		v = "1.0.0"
	}
	return host.Manifest{Name: "fake", Version: v, Actions: []sdk.Action{{Name: "ok"}, {Name: "hang"}}}
}

var errStreamBroken = errors.New("stream broken")

// Execute: ok answers; crash exits with status 3 mid-command; hang waits for its
// context (and answers once cancelled); stuck ignores its context until killed.
func (c *fakeChild) Execute(ctx context.Context, cmd host.Command, onRows func([]string) error) (sdk.Result, error) {
	if c.dying.Load() {
		return sdk.Result{}, errStreamBroken
	}
	switch cmd.Action {
	case "ok":
		if err := onRows([]string{"ok|" + cmd.ID}); err != nil {
			return sdk.Result{}, err
		}
		return sdk.Done(), nil
	case "crash":
		_ = onRows([]string{"before|crash"})
		c.end("exit status 3")
		return sdk.Result{}, errStreamBroken
	case "hang":
		select {
		case <-ctx.Done():
			return sdk.Result{Code: 1}, ctx.Err()
		case <-c.exited:
			return sdk.Result{}, errStreamBroken
		}
	case "stuck":
		<-c.exited
		return sdk.Result{}, errStreamBroken
	}
	return sdk.Result{}, fmt.Errorf("fake: unknown action %s", cmd.Action)
}

func (c *fakeChild) Ping(time.Duration) error {
	if e := c.pingErr.Load(); e != nil {
		return *e
	}
	return nil
}

func (c *fakeChild) Exited() <-chan struct{} { return c.exited }

func (c *fakeChild) ExitStatus() string {
	if s := c.status.Load(); s != nil {
		return *s
	}
	return "still running"
}

func (c *fakeChild) Kill() {
	if c.killLag == 0 {
		c.end("killed by signal 9 (killed)")
		return
	}
	c.dying.Store(true)
	time.AfterFunc(c.killLag, func() { c.end("killed by signal 9 (killed)") })
}

func (c *fakeChild) Stop(time.Duration)  { c.end("exit status 0") }
func (c *fakeChild) Pid() int            { return c.pid }
func (c *fakeChild) alive() bool         { return c.ExitStatus() == "still running" }
func (c *fakeChild) failPings(err error) { c.pingErr.Store(&err) }

// fakeLauncher starts fakeChildren; fail, when set, decides whether start n (from 1)
// fails and how.
type fakeLauncher struct {
	mu       sync.Mutex
	starts   []time.Time
	children []*fakeChild
	fail     func(n int) error
	delay    time.Duration
	killLag  time.Duration // each child's killLag
	// failBuild, when set, decides whether a start of b fails and how; hold, when set,
	// delays a start of b until it is closed.
	failBuild func(b Binary) error
	hold      func(b Binary) <-chan struct{}
}

func (l *fakeLauncher) Launch(ctx context.Context, b Binary, _ sdk.Config) (Child, error) {
	l.mu.Lock()
	l.starts = append(l.starts, time.Now())
	n := len(l.starts)
	fail, delay, failBuild, hold := l.fail, l.delay, l.failBuild, l.hold
	l.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	if hold != nil {
		select {
		case <-hold(b):
		case <-ctx.Done():
			return nil, fmt.Errorf("describe: %w", ctx.Err())
		}
	}
	if fail != nil {
		if err := fail(n); err != nil {
			return nil, err
		}
	}
	if failBuild != nil {
		if err := failBuild(b); err != nil {
			return nil, err
		}
	}
	c := newFakeChild(1000 + n)
	c.version = versionOf(b)
	c.killLag = l.killLag
	l.mu.Lock()
	l.children = append(l.children, c)
	l.mu.Unlock()
	return c, nil
}

func (l *fakeLauncher) last() *fakeChild {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.children[len(l.children)-1]
}

func (l *fakeLauncher) startTimes() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.starts...)
}

// newTestSupervisor builds a supervisor over a plugin dir holding one trusted plugin,
// "fake", with short test durations unless opts sets them.
func newTestSupervisor(t *testing.T, l *fakeLauncher, opts Options) *Supervisor {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "plugins")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := BinaryPrefix + "fake"
	if hostOS == "windows" {
		name += ".exe"
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte("fake"), 0o755); err != nil {
		t.Fatal(err)
	}
	cat := &trust.Catalog{Plugins: map[string]*trust.Entry{"fake": {File: name, SHA256: strings.Repeat("00", 32)}}}
	if err := cat.Save(dir); err != nil {
		t.Fatal(err)
	}
	opts.PluginDir = dir
	if opts.Launcher == nil {
		opts.Launcher = l
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&opts.BackoffMin, 10*time.Millisecond)
	def(&opts.BackoffMax, 40*time.Millisecond)
	def(&opts.Grace, 50*time.Millisecond)
	def(&opts.PingInterval, time.Hour)
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func run(s *Supervisor, action, id string, timeout time.Duration) (string, sdk.Result, error) {
	var rows []string
	var mu sync.Mutex
	res, err := s.Execute(context.Background(), Request{Plugin: "fake", Command: host.Command{ID: id, Action: action}, Timeout: timeout}, func(b []string) error {
		mu.Lock()
		defer mu.Unlock()
		rows = append(rows, b...)
		return nil
	})
	return strings.Join(rows, ","), res, err
}

func waitState(t *testing.T, s *Supervisor, want State) Status {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := s.Status()[0]
		if st.State == want {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("state %s, want %s: %+v", st.State, want, st)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitRunning waits until the plugin runs its n-th child.
func waitRunning(t *testing.T, s *Supervisor, l *fakeLauncher, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := s.Status()[0]
		if st.State == StateRunning && st.Pid == 1000+n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d not running: %+v", n, st)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestKeeperStartsOnDemandAndReuses(t *testing.T) {
	l := &fakeLauncher{}
	s := newTestSupervisor(t, l, Options{})
	if st := s.Status()[0]; st.State != StateStopped || st.Name != "fake" {
		t.Fatalf("before any command: %+v", st)
	}
	for i := range 3 {
		rows, res, err := run(s, "ok", fmt.Sprint(i), time.Second)
		if err != nil || res.Code != 0 || rows != "ok|"+fmt.Sprint(i) {
			t.Fatalf("command %d: %q %+v %v", i, rows, res, err)
		}
	}
	if n := len(l.startTimes()); n != 1 {
		t.Errorf("%d starts for 3 commands, want 1", n)
	}
	st := s.Status()[0]
	if st.State != StateRunning || st.Pid != 1001 || st.Version != "1.0.0" || strings.Join(st.Actions, ",") != "ok,hang" {
		t.Errorf("status %+v", st)
	}
}

// A child that dies is restarted after BackoffMin, doubling per restart up to
// BackoffMax; the crash answer says how the child ended.
func TestKeeperBackoffDoubles(t *testing.T) {
	l := &fakeLauncher{}
	s := newTestSupervisor(t, l, Options{BackoffMin: 20 * time.Millisecond, BackoffMax: 70 * time.Millisecond, RestartBudget: 10})
	for i := range 4 {
		rows, _, err := run(s, "crash", "", time.Second)
		var crashed *CrashedError
		if !errors.As(err, &crashed) || err.Error() != "plugin crashed: fake exited during the command (exit status 3)" || rows != "before|crash" {
			t.Fatalf("crash %d: rows %q, err %v", i, rows, err)
		}
		waitRunning(t, s, l, i+2) // the eager restart
	}
	starts := l.startTimes()
	want := []time.Duration{20, 40, 70, 70} // ms; 80 is capped at 70
	for i, w := range want {
		gap := starts[i+1].Sub(starts[i])
		if gap < w*time.Millisecond {
			t.Errorf("restart %d after %s, want at least %dms", i+1, gap, w)
		}
	}
	if st := s.Status()[0]; st.Restarts != 4 || !strings.Contains(st.LastError, "exit status 3") {
		t.Errorf("status after 4 crashes: %+v", st)
	}
}

// More restarts than the budget within the window mark the plugin failed: commands
// answer at once with the reason until the failed period ends, then it starts again.
func TestKeeperBudgetAndFailedPeriod(t *testing.T) {
	l := &fakeLauncher{}
	s := newTestSupervisor(t, l, Options{RestartBudget: 2, FailedFor: 2 * time.Second})
	for i := range 3 {
		if _, _, err := run(s, "crash", "", time.Second); err == nil {
			t.Fatalf("crash %d: no error", i)
		}
		if i < 2 {
			waitRunning(t, s, l, i+2)
		}
	}
	st := waitState(t, s, StateFailed)
	if !strings.HasPrefix(st.LastError, "restarted 2 times within 60s, last error: exited unexpectedly (exit status 3)") {
		t.Errorf("last error %q", st.LastError)
	}
	start := time.Now()
	_, _, err := run(s, "ok", "", time.Second)
	var failed *FailedError
	// "At once" is well inside the failed period, with room for a loaded machine.
	if !errors.As(err, &failed) || time.Since(start) > time.Second {
		t.Fatalf("want *FailedError at once, got %v after %s", err, time.Since(start))
	}
	time.Sleep(time.Until(failed.Until) + 20*time.Millisecond)
	if rows, _, err := run(s, "ok", "x", time.Second); err != nil || rows != "ok|x" {
		t.Fatalf("after the failed period: %q %v", rows, err)
	}
	if n := len(l.startTimes()); n != 4 {
		t.Errorf("%d starts, want 4", n)
	}
}

// Past its deadline plus the grace period a command kills the child: it answers
// TimeoutError, every other command on that child CrashedError with the contract's
// words, and the plugin is restarted.
func TestKeeperDeadlineKill(t *testing.T) {
	l := &fakeLauncher{}
	s := newTestSupervisor(t, l, Options{Grace: 30 * time.Millisecond})
	if _, _, err := run(s, "ok", "", time.Second); err != nil {
		t.Fatal(err)
	}
	other := make(chan error, 1)
	go func() {
		_, _, err := run(s, "stuck", "", time.Hour)
		other <- err
	}()
	start := time.Now()
	_, _, err := run(s, "stuck", "late", 50*time.Millisecond)
	var to *TimeoutError
	if !errors.As(err, &to) || err.Error() != "plugin timed out after 0.05s" {
		t.Fatalf("want TimeoutError, got %v", err)
	}
	if took := time.Since(start); took < 80*time.Millisecond || took > 2*time.Second {
		t.Errorf("killed after %s, want deadline 50ms + grace 30ms", took)
	}
	err = <-other
	if err == nil || err.Error() != "plugin crashed: stopped after another command timed out" {
		t.Errorf("the other command: %v", err)
	}
	waitRunning(t, s, l, 2)
	if len(l.startTimes()) != 2 {
		t.Errorf("%d starts, want a restart after the kill", len(l.startTimes()))
	}
}

// A child the agent has begun to kill is handed to no new command: between the kill
// and the exit (a loaded machine takes a while to reap) a command that arrives waits
// for the restart rather than meet the kill and answer another command's crash.
func TestKeeperNoDyingChild(t *testing.T) {
	l := &fakeLauncher{killLag: 300 * time.Millisecond}
	s := newTestSupervisor(t, l, Options{Grace: 30 * time.Millisecond})
	stuck := make(chan error, 1)
	go func() {
		_, _, err := run(s, "stuck", "late", 50*time.Millisecond)
		stuck <- err
	}()
	waitRunning(t, s, l, 1)
	for deadline := time.Now().Add(5 * time.Second); !l.last().dying.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stuck command's child was never killed")
		}
	}
	rows, _, err := run(s, "ok", "next", 5*time.Second)
	if err := <-stuck; err == nil {
		t.Error("the stuck command: no error")
	}
	if err != nil || rows != "ok|next" {
		t.Fatalf("the command after the kill got %q, %v", rows, err)
	}
	if n := len(l.startTimes()); n != 2 {
		t.Errorf("%d starts, want the command to run on the restarted child", n)
	}
}

// The deadline also bounds the wait for a child: a command whose plugin is still
// starting, or waiting out a restart, when its deadline passes is answered then with
// WaitTimeoutError naming the state, and the plugin goes on starting for the next.
func TestKeeperDeadlineCoversTheStart(t *testing.T) {
	l := &fakeLauncher{delay: 500 * time.Millisecond}
	s := newTestSupervisor(t, l, Options{BackoffMin: time.Hour, BackoffMax: time.Hour})
	_, _, err := run(s, "ok", "", 50*time.Millisecond)
	var waited *WaitTimeoutError
	if !errors.As(err, &waited) || err.Error() != "command timed out after 0.05s waiting for plugin fake to start (starting); it did not run" {
		t.Fatalf("during the start: %v, want WaitTimeoutError", err)
	}
	waitState(t, s, StateRunning)
	if _, _, err := run(s, "crash", "", time.Second); err == nil {
		t.Fatal("the crash answered without an error")
	}
	waitState(t, s, StateBackoff)
	_, _, err = run(s, "ok", "", 50*time.Millisecond)
	if !errors.As(err, &waited) || err.Error() != "command timed out after 0.05s waiting for plugin fake to start (backoff: exited unexpectedly (exit status 3)); it did not run" {
		t.Fatalf("during the backoff: %v, want WaitTimeoutError", err)
	}
}

// A start that runs out of StartTimeout (a busy machine) is retried after the backoff,
// and a command waiting for it waits for the retry within its own deadline rather
// than failing with the first start's error.
func TestKeeperSlowStartRetriedForTheWaitingCommand(t *testing.T) {
	l := &fakeLauncher{}
	l.fail = func(n int) error {
		if n == 1 {
			return errors.New("configure: deadline exceeded")
		}
		return nil
	}
	slow := &slowFirstLauncher{fakeLauncher: l}
	s := newTestSupervisor(t, l, Options{Launcher: slow, StartTimeout: 50 * time.Millisecond})
	rows, _, err := run(s, "ok", "c", 10*time.Second)
	if err != nil || rows != "ok|c" {
		t.Fatalf("rows %q, error %v: want the command answered by the restarted child", rows, err)
	}
	if n := len(l.startTimes()); n != 2 {
		t.Errorf("%d starts, want the slow one and its retry", n)
	}
	if st := s.Status()[0]; st.Restarts != 1 {
		t.Errorf("restarts %d, want the slow start counted", st.Restarts)
	}
}

// slowFirstLauncher makes its first start outlast its context, as a start on a busy
// machine would, then fails it with the fake's error.
type slowFirstLauncher struct{ *fakeLauncher }

func (l *slowFirstLauncher) Launch(ctx context.Context, b Binary, cfg sdk.Config) (Child, error) {
	if len(l.startTimes()) == 0 {
		<-ctx.Done()
	}
	return l.fakeLauncher.Launch(ctx, b, cfg)
}

// A cancelled command whose handler stops in time costs nothing; one whose handler
// ignores the cancellation is killed after the grace period.
func TestKeeperCancellation(t *testing.T) {
	l := &fakeLauncher{}
	s := newTestSupervisor(t, l, Options{Grace: 40 * time.Millisecond})
	// The child starts first: a command's context bounds its plugin's start too, and
	// under Wine on a loaded machine the start alone could take 20 ms.
	if _, _, err := run(s, "ok", "", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := s.Execute(ctx, Request{Plugin: "fake", Command: host.Command{Action: "hang"}}, func([]string) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hang: %v", err)
	}
	first := l.last()
	if !first.alive() {
		t.Fatal("a handler that honoured its cancellation got its child killed")
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	_, err = s.Execute(ctx2, Request{Plugin: "fake", Command: host.Command{Action: "stuck"}}, func([]string) error { return nil })
	if err == nil {
		t.Fatal("stuck: no error")
	}
	if first.alive() || first.ExitStatus() != "killed by signal 9 (killed)" {
		t.Errorf("a handler ignoring its cancellation was not killed: %s", first.ExitStatus())
	}
}

// PingMisses unanswered pings in a row kill the child, and it is restarted.
func TestKeeperPingMisses(t *testing.T) {
	l := &fakeLauncher{}
	s := newTestSupervisor(t, l, Options{PingInterval: 10 * time.Millisecond, PingMisses: 3})
	if _, _, err := run(s, "ok", "", time.Second); err != nil {
		t.Fatal(err)
	}
	c := l.last()
	c.failPings(errors.New("no answer"))
	select {
	case <-c.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("child with failing pings was not killed")
	}
	waitRunning(t, s, l, 2)
	if st := s.Status()[0]; st.LastError != "no answer to 3 health pings" || st.Pid == c.pid {
		t.Errorf("status %+v", st)
	}
}

// A launch refused for the binary itself leaves the plugin refused, for good; a
// launch that fails otherwise is retried with backoff.
func TestKeeperRefusedAndFailedStarts(t *testing.T) {
	l := &fakeLauncher{fail: func(n int) error {
		if n == 1 {
			return &StartError{Plugin: "fake", Err: errors.New("handshake timed out")}
		}
		return &RefusedError{Path: "/p/yuzu-plugin-fake", Reason: "SHA-256 does not match"}
	}}
	s := newTestSupervisor(t, l, Options{})
	_, _, err := run(s, "ok", "", time.Second)
	var se *StartError
	if !errors.As(err, &se) {
		t.Fatalf("first start: %v", err)
	}
	st := waitState(t, s, StateRefused)
	if st.LastError != "plugin binary /p/yuzu-plugin-fake refused: SHA-256 does not match" {
		t.Errorf("refused status %+v", st)
	}
	_, _, err = run(s, "ok", "", time.Second)
	var re *RefusedError
	if !errors.As(err, &re) {
		t.Errorf("after refusal: %v", err)
	}
	if n := len(l.startTimes()); n != 2 {
		t.Errorf("%d starts; a refused binary must not be started again", n)
	}
}

// Every state change is pushed to subscribers, in order, and each is one the
// transition table allows.
func TestKeeperPushesStateChanges(t *testing.T) {
	l := &fakeLauncher{}
	s := newTestSupervisor(t, l, Options{})
	sub := s.Subscribe(64)
	if _, _, err := run(s, "crash", "", time.Second); err == nil {
		t.Fatal("crash: no error")
	}
	waitRunning(t, s, l, 2)
	s.Close()
	var got []string
	for c := range sub.C {
		if !Allowed(c.From, c.To) {
			t.Errorf("pushed a transition the table does not allow: %+v", c)
		}
		if c.Plugin != "fake" || c.Reason == "" || c.At.IsZero() {
			t.Errorf("incomplete change %+v", c)
		}
		got = append(got, string(c.From)+">"+string(c.To))
	}
	want := "stopped>starting starting>running running>backoff backoff>starting starting>running running>stopped"
	if strings.Join(got, " ") != want {
		t.Errorf("changes:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if sub.Dropped() != 0 {
		t.Errorf("dropped %d", sub.Dropped())
	}
}

// Close while a child is still starting stops what the start produces and answers the
// waiting command.
func TestKeeperCloseDuringStart(t *testing.T) {
	l := &fakeLauncher{delay: 100 * time.Millisecond}
	s := newTestSupervisor(t, l, Options{})
	errc := make(chan error, 1)
	go func() {
		_, _, err := run(s, "ok", "", time.Second)
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	s.Close()
	if err := <-errc; err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Errorf("command during close: %v", err)
	}
	if c := l.last(); c.alive() {
		t.Error("the child started during close is still running")
	}
	if st := s.Status()[0]; st.State != StateStopped {
		t.Errorf("after close: %+v", st)
	}
}

// A command that arrives right after a crash, before the exit event is processed,
// waits for the restart instead of getting the dead child (and its old crash).
func TestKeeperNoDeadChildAfterCrash(t *testing.T) {
	l := &fakeLauncher{}
	s := newTestSupervisor(t, l, Options{RestartBudget: 50})
	for i := range 20 {
		if _, _, err := run(s, "crash", "", time.Second); err == nil {
			t.Fatalf("crash %d: no error", i)
		}
		rows, _, err := run(s, "ok", "x", time.Second)
		if err != nil || rows != "ok|x" {
			t.Fatalf("round %d: the command after a crash got %q, %v", i, rows, err)
		}
	}
}
