package supervisor

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
)

// gatedStopLauncher makes children whose graceful Stop waits until gate is closed, as
// a real child takes a while to exit once its connection is closed.
type gatedStopLauncher struct {
	*fakeLauncher
	gate    chan struct{}
	stopped chan struct{} // closed at the first Stop call
	once    sync.Once
}

type gatedChild struct {
	*fakeChild
	l *gatedStopLauncher
}

func (c gatedChild) Stop(time.Duration) {
	c.l.once.Do(func() { close(c.l.stopped) })
	<-c.l.gate
	c.end("exit status 0")
}

func (l *gatedStopLauncher) Launch(ctx context.Context, b Binary, cfg sdk.Config) (Child, error) {
	c, err := l.fakeLauncher.Launch(ctx, b, cfg)
	if err != nil {
		return nil, err
	}
	return gatedChild{c.(*fakeChild), l}, nil
}

// waitStopCall waits for the first graceful Stop of an idle child.
func waitStopCall(t *testing.T, l *gatedStopLauncher) {
	t.Helper()
	select {
	case <-l.stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("no idle stop within 5 s")
	}
}

func idleOpts(d time.Duration) Options {
	return Options{IdleStop: map[string]time.Duration{"*": d}}
}

// A plugin with an idle stop has no child until its first command; once that command
// is done and the idle period has passed, its child is stopped gracefully, which is no
// failure; the next command starts a new child.
func TestIdleLazyStartAndStop(t *testing.T) {
	l := &fakeLauncher{}
	s := newTestSupervisor(t, l, idleOpts(60*time.Millisecond))
	time.Sleep(100 * time.Millisecond)
	if n := len(l.startTimes()); n != 0 {
		t.Fatalf("%d starts before any command, want 0", n)
	}
	if st := s.Status()[0]; st.State != StateStopped || st.Pid != 0 || st.IdleStop != 60*time.Millisecond {
		t.Fatalf("before any command: %+v", st)
	}
	sub := s.Subscribe(64)
	defer sub.Cancel()
	if rows, _, err := run(s, "ok", "1", time.Second); err != nil || rows != "ok|1" {
		t.Fatalf("first command: %q %v", rows, err)
	}
	first := l.last()
	st := waitState(t, s, StateIdle)
	// Wait for the exit to be seen: the pid goes, the manifest stays. The state says
	// idle as the stop begins; the child is stopped in the background, so how it ended
	// is known only once it is gone (checked before, this failed under Wine's slower
	// scheduling).
	deadline := time.Now().Add(5 * time.Second)
	for st.Pid != 0 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
		st = s.Status()[0]
	}
	if first.ExitStatus() != "exit status 0" {
		t.Errorf("the idle child ended %q, want a graceful stop (exit status 0)", first.ExitStatus())
	}
	if st.Pid != 0 || st.Restarts != 0 || st.IdleStops != 1 || st.LastError != "" || strings.Join(st.Actions, ",") != "ok,hang" || st.Version != "1.0.0" || st.StartTook <= 0 {
		t.Errorf("idle status: %+v", st)
	}
	if rows, _, err := run(s, "ok", "2", time.Second); err != nil || rows != "ok|2" {
		t.Fatalf("command after the idle stop: %q %v", rows, err)
	}
	if n := len(l.startTimes()); n != 2 {
		t.Errorf("%d starts, want 2 (one before, one after the idle stop)", n)
	}
	var seen []string
	for len(sub.C) > 0 {
		c := <-sub.C
		seen = append(seen, string(c.From)+">"+string(c.To))
	}
	want := "stopped>starting running>idle idle>starting"
	if got := strings.Join(seen, " "); !strings.Contains(got, "stopped>starting starting>running running>idle idle>starting starting>running") {
		t.Errorf("transitions %q, want the path through %s and no backoff", got, want)
	}
}

// Idle stops never count against the restart budget: a budget of 1 survives many.
func TestIdleStopIsNoFailure(t *testing.T) {
	l := &fakeLauncher{}
	opts := idleOpts(20 * time.Millisecond)
	opts.RestartBudget = 1
	s := newTestSupervisor(t, l, opts)
	for i := range 4 {
		if _, _, err := run(s, "ok", "", time.Second); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		waitState(t, s, StateIdle)
		// The next command must not find the previous child mid-exit only by luck.
		deadline := time.Now().Add(5 * time.Second)
		for s.Status()[0].Pid != 0 && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
	}
	st := s.Status()[0]
	if st.Restarts != 0 || st.IdleStops != 4 || st.State != StateIdle {
		t.Errorf("after 4 idle stops: %+v", st)
	}
	if n := len(l.startTimes()); n != 4 {
		t.Errorf("%d starts, want 4", n)
	}
}

// A command in flight keeps the child: the idle period starts when it is done.
func TestIdleWaitsForCommandsInFlight(t *testing.T) {
	l := &fakeLauncher{}
	s := newTestSupervisor(t, l, idleOpts(30*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Execute(ctx, Request{Plugin: "fake", Command: host.Command{Action: "hang"}, Timeout: 10 * time.Second}, func([]string) error { return nil })
		done <- err
	}()
	waitState(t, s, StateRunning)
	time.Sleep(150 * time.Millisecond) // five idle periods
	if st := s.Status()[0]; st.State != StateRunning || st.IdleStops != 0 {
		t.Fatalf("idle stop with a command in flight: %+v", st)
	}
	cancel()
	<-done
	st := waitState(t, s, StateIdle)
	if st.IdleStops != 1 || st.Restarts != 0 {
		t.Errorf("after the command: %+v", st)
	}
}

// A command that arrives while the idle child is being stopped waits for it to be
// gone, then runs on a new child.
func TestIdleCommandDuringTheStop(t *testing.T) {
	l := &gatedStopLauncher{fakeLauncher: &fakeLauncher{}, gate: make(chan struct{}), stopped: make(chan struct{})}
	opts := idleOpts(20 * time.Millisecond)
	opts.Launcher = l
	s := newTestSupervisor(t, l.fakeLauncher, opts)
	if _, _, err := run(s, "ok", "", time.Second); err != nil {
		t.Fatal(err)
	}
	waitStopCall(t, l)
	waitState(t, s, StateIdle)
	type answer struct {
		rows string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		rows, _, err := run(s, "ok", "during", 5*time.Second)
		got <- answer{rows, err}
	}()
	select {
	case a := <-got:
		t.Fatalf("the command ran before the stopping child was gone: %+v", a)
	case <-time.After(100 * time.Millisecond):
	}
	if n := len(l.startTimes()); n != 1 {
		t.Fatalf("%d starts while the old child stops, want 1", n)
	}
	close(l.gate)
	a := <-got
	if a.err != nil || a.rows != "ok|during" {
		t.Fatalf("command during the stop: %+v", a)
	}
	if st := s.Status()[0]; st.Restarts != 0 || st.IdleStops != 1 || len(l.startTimes()) != 2 {
		t.Errorf("status %+v, %d starts; want no restart, one idle stop, 2 starts", st, len(l.startTimes()))
	}
}

// Health pings go to the child directly: they neither keep it from its idle stop nor
// start a stopped one.
func TestIdlePingsDoNotKeepOrStart(t *testing.T) {
	l := &fakeLauncher{}
	opts := idleOpts(60 * time.Millisecond)
	opts.PingInterval = 5 * time.Millisecond
	s := newTestSupervisor(t, l, opts)
	if _, _, err := run(s, "ok", "", time.Second); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, StateIdle)
	time.Sleep(100 * time.Millisecond)
	if n := len(l.startTimes()); n != 1 {
		t.Errorf("%d starts with pings due while idle, want 1", n)
	}
	if st := s.Status()[0]; st.State != StateIdle {
		t.Errorf("state %s, want idle", st.State)
	}
}

// Prime starts the plugin once for its manifest and, with an idle stop, stops it at
// once; Describe then answers from that manifest without a start. Without an idle
// stop the plugin stays running.
func TestIdlePrime(t *testing.T) {
	l := &fakeLauncher{}
	s := newTestSupervisor(t, l, idleOpts(time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.Prime(ctx)
	st := waitState(t, s, StateIdle)
	if st.IdleStops != 1 || strings.Join(st.Actions, ",") != "ok,hang" {
		t.Errorf("after Prime: %+v", st)
	}
	m, err := s.Describe(ctx, "fake")
	if err != nil || m.Name != "fake" || len(m.Actions) != 2 {
		t.Errorf("Describe of an idle plugin: %+v %v", m, err)
	}
	if n := len(l.startTimes()); n != 1 {
		t.Errorf("%d starts, want 1 (Describe must not start an idle plugin)", n)
	}

	warm := &fakeLauncher{}
	w := newTestSupervisor(t, warm, Options{})
	w.Prime(ctx)
	if st := w.Status()[0]; st.State != StateRunning {
		t.Errorf("Prime without an idle stop: %+v, want running", st)
	}
}

// Close while an idle child is being stopped waits for it and leaves the plugin
// stopped.
func TestIdleCloseDuringTheStop(t *testing.T) {
	l := &gatedStopLauncher{fakeLauncher: &fakeLauncher{}, gate: make(chan struct{}), stopped: make(chan struct{})}
	opts := idleOpts(20 * time.Millisecond)
	opts.Launcher = l
	s := newTestSupervisor(t, l.fakeLauncher, opts)
	if _, _, err := run(s, "ok", "", time.Second); err != nil {
		t.Fatal(err)
	}
	waitStopCall(t, l)
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	time.AfterFunc(50*time.Millisecond, func() { close(l.gate) })
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	if st := s.Status()[0]; st.State != StateStopped || st.Restarts != 0 {
		t.Errorf("after Close: %+v", st)
	}
}
