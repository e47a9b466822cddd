//go:build linux

package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/dispatch"
	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
)

// newSupervisor starts a supervisor over a fresh plugin dir holding the named plugins.
// Zero durations in opts take short test values, not the production defaults; its
// log is printed when the test fails.
func newSupervisor(t testing.TB, opts supervisor.Options, plugins ...string) *supervisor.Supervisor {
	t.Helper()
	if opts.PluginDir == "" {
		opts.PluginDir = pluginDir(t, plugins...)
	}
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	if opts.BackoffMin == 0 {
		opts.BackoffMin = 20 * time.Millisecond
	}
	if opts.BackoffMax == 0 {
		opts.BackoffMax = 200 * time.Millisecond
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 30 * time.Second
	}
	logs := &lockedBuffer{}
	if opts.Logger == nil {
		opts.Logger = hclog.New(&hclog.LoggerOptions{Name: "yuzu-agent", Level: hclog.Debug, Output: logs, IndependentLevels: true})
	}
	s, err := supervisor.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		if t.Failed() {
			t.Logf("supervisor log:\n%s", logs.String())
		}
	})
	return s
}

// outcome is one command's rows, result and error, and how long it took.
type outcome struct {
	rows []string
	res  sdk.Result
	err  error
	took time.Duration
}

func (o outcome) String() string {
	return fmt.Sprintf("rows %q, result %+v, error %v, took %s", o.rows, o.res, o.err, o.took.Round(time.Millisecond))
}

// through adapts a dispatcher to execute: the command is admitted with no expiry and
// no start hook, as exec submits it.
func through(d *dispatch.Dispatcher) func(context.Context, supervisor.Request, func([]string) error) (sdk.Result, error) {
	return func(ctx context.Context, req supervisor.Request, onRows func([]string) error) (sdk.Result, error) {
		return d.Do(ctx, dispatch.Request{Request: req}, onRows)
	}
}

// execute runs one command through an executor (a supervisor or a dispatcher's Do).
func execute(ctx context.Context, do func(context.Context, supervisor.Request, func([]string) error) (sdk.Result, error), req supervisor.Request) outcome {
	var o outcome
	var mu sync.Mutex
	start := time.Now()
	o.res, o.err = do(ctx, req, func(rows []string) error {
		mu.Lock()
		defer mu.Unlock()
		o.rows = append(o.rows, rows...)
		return nil
	})
	o.took = time.Since(start)
	return o
}

// mustOK runs a command that must succeed with exactly the given rows.
func mustOK(t testing.TB, s *supervisor.Supervisor, plugin, action string, params map[string]string, rows ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := execute(ctx, s.Execute, supervisor.Request{Plugin: plugin, Command: host.Command{Action: action, Params: params}, Timeout: 20 * time.Second})
	if o.err != nil || o.res.Code != 0 || strings.Join(o.rows, "\n") != strings.Join(rows, "\n") {
		t.Fatalf("%s %s: want rows %q: %s", plugin, action, rows, o)
	}
}

// statusOf returns the status of one plugin.
func statusOf(t testing.TB, s *supervisor.Supervisor, name string) supervisor.Status {
	t.Helper()
	for _, st := range s.Status() {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no status for %s in %+v", name, s.Status())
	return supervisor.Status{}
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startMarker names a file the sleeper's sleep handlers create when they start (their
// started parameter): waitStarted then knows a command reached its handler, where a
// fixed sleep only guesses and loses on a loaded machine.
func startMarker(t testing.TB) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "started-")
	if err != nil {
		t.Fatal(err)
	}
	path := f.Name()
	_ = f.Close()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitStarted waits for the handlers given these markers to be running.
func waitStarted(t testing.TB, markers ...string) {
	t.Helper()
	waitFor(t, 30*time.Second, "the sleep handler to start", func() bool {
		for _, m := range markers {
			if _, err := os.Lstat(m); err != nil {
				return false
			}
		}
		return true
	})
}

// runningPid starts the plugin if needed and returns its child's pid.
func runningPid(t testing.TB, s *supervisor.Supervisor, plugin string) int {
	t.Helper()
	mustOK(t, s, plugin, "ok", nil, "ok|"+plugin)
	st := statusOf(t, s, plugin)
	if st.State != supervisor.StateRunning || st.Pid <= 0 {
		t.Fatalf("%s after a command: %+v", plugin, st)
	}
	return st.Pid
}

// TestSupervisorChildKilledMidCommand: SIGKILL of the child while a command runs ends
// that command with a *CrashedError; the plugin is restarted and the next command
// succeeds.
func TestSupervisorChildKilledMidCommand(t *testing.T) {
	t.Parallel()
	s := newSupervisor(t, supervisor.Options{}, sleeperBin)
	pid := runningPid(t, s, "sleeper")
	started := startMarker(t)
	done := make(chan outcome, 1)
	go func() {
		done <- execute(context.Background(), s.Execute, supervisor.Request{Plugin: "sleeper", Command: host.Command{Action: "sleep_ctx", Params: map[string]string{"seconds": "30", "started": started}}})
	}()
	waitStarted(t, started)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var o outcome
	select {
	case o = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the command did not end after its plugin was killed")
	}
	var crashed *supervisor.CrashedError
	if !errors.As(o.err, &crashed) || !strings.HasPrefix(o.err.Error(), "plugin crashed: ") || crashed.Plugin != "sleeper" {
		t.Fatalf("want *CrashedError \"plugin crashed: ...\": %s", o)
	}
	mustOK(t, s, "sleeper", "ok", nil, "ok|sleeper")
	st := statusOf(t, s, "sleeper")
	if st.Pid == pid || st.Restarts != 1 || st.State != supervisor.StateRunning {
		t.Errorf("after the restart: %+v (old pid %d)", st, pid)
	}
}

// TestSupervisorCrashKeepsRows: rows sent before a crash are relayed, then the
// command ends with *CrashedError.
func TestSupervisorCrashKeepsRows(t *testing.T) {
	t.Parallel()
	s := newSupervisor(t, supervisor.Options{}, crasherBin)
	for _, action := range []string{"crash", "kill"} {
		o := execute(context.Background(), s.Execute, supervisor.Request{Plugin: "crasher", Command: host.Command{Action: action}, Timeout: 20 * time.Second})
		var crashed *supervisor.CrashedError
		want := map[string]string{
			"crash": "plugin crashed: crasher exited during the command (exit status 3)",
			"kill":  "plugin crashed: crasher exited during the command (killed by signal 9 (killed))",
		}[action]
		if !errors.As(o.err, &crashed) || o.err.Error() != want || strings.Join(o.rows, ",") != "before|"+action {
			t.Errorf("%s: want row before|%s then plugin crashed: %s", action, action, o)
		}
		mustOK(t, s, "crasher", "ok", nil, "ok|crasher")
	}
}

// TestSupervisorTimeout: a handler that ignores its context is killed at deadline
// plus grace; the command ends with *TimeoutError, another command on the same child
// with *CrashedError saying why, and the next command succeeds (docs/agent.md).
func TestSupervisorTimeout(t *testing.T) {
	t.Parallel()
	s := newSupervisor(t, supervisor.Options{Grace: 300 * time.Millisecond}, sleeperBin)
	runningPid(t, s, "sleeper")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	started := startMarker(t)
	bystander := make(chan outcome, 1)
	go func() {
		bystander <- execute(ctx, s.Execute, supervisor.Request{Plugin: "sleeper", Command: host.Command{ID: "bystander", Action: "sleep", Params: map[string]string{"seconds": "30", "started": started}}})
	}()
	waitStarted(t, started)
	o := execute(ctx, s.Execute, supervisor.Request{Plugin: "sleeper", Command: host.Command{ID: "late", Action: "sleep", Params: map[string]string{"seconds": "30"}}, Timeout: time.Second})
	var timeout *supervisor.TimeoutError
	if !errors.As(o.err, &timeout) || o.err.Error() != "plugin timed out after 1s" {
		t.Errorf("want *TimeoutError \"plugin timed out after 1s\": %s", o)
	}
	if o.took < time.Second+300*time.Millisecond {
		t.Errorf("killed before deadline plus grace: %s", o)
	}
	b := <-bystander
	var crashed *supervisor.CrashedError
	if !errors.As(b.err, &crashed) || b.err.Error() != "plugin crashed: stopped after another command timed out" {
		t.Errorf("bystander: want \"plugin crashed: stopped after another command timed out\": %s", b)
	}
	mustOK(t, s, "sleeper", "ok", nil, "ok|sleeper")
}

// TestSupervisorRestartBudget: six crashes in quick succession spend the budget of
// five restarts; the plugin is failed and the next command answers at once with
// *FailedError (docs/agent.md).
func TestSupervisorRestartBudget(t *testing.T) {
	t.Parallel()
	s := newSupervisor(t, supervisor.Options{BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond}, crasherBin)
	for i := 1; i <= 6; i++ {
		o := execute(context.Background(), s.Execute, supervisor.Request{Plugin: "crasher", Command: host.Command{Action: "kill"}, Timeout: 20 * time.Second})
		var crashed *supervisor.CrashedError
		if !errors.As(o.err, &crashed) {
			t.Fatalf("crash %d: want *CrashedError: %s", i, o)
		}
	}
	waitFor(t, 5*time.Second, "state failed", func() bool { return statusOf(t, s, "crasher").State == supervisor.StateFailed })
	o := execute(context.Background(), s.Execute, supervisor.Request{Plugin: "crasher", Command: host.Command{Action: "ok"}, Timeout: 20 * time.Second})
	var failed *supervisor.FailedError
	if !errors.As(o.err, &failed) || !strings.HasPrefix(o.err.Error(), "plugin crasher failed: restarted 5 times within 60s") {
		t.Fatalf("want *FailedError right away: %s", o)
	}
	// Answered from the state, not after a start: the restart count below stays 6
	// and no child runs.
	if until := time.Until(failed.Until); until < 4*time.Minute || until > 5*time.Minute {
		t.Errorf("failed until %s from now, want about 5 min", until)
	}
	st := statusOf(t, s, "crasher")
	if st.Restarts != 6 || st.Pid != 0 || !strings.Contains(st.LastError, "restarted 5 times") {
		t.Errorf("status of the failed plugin: %+v", st)
	}
}

// TestSupervisorHealthPing: a child that stops answering (SIGSTOP) misses its pings
// and is replaced.
func TestSupervisorHealthPing(t *testing.T) {
	t.Parallel()
	s := newSupervisor(t, supervisor.Options{PingInterval: 200 * time.Millisecond, PingMisses: 2}, sleeperBin)
	pid := runningPid(t, s, "sleeper")
	path := exePath(pid)
	started := startMarker(t)
	inflight := make(chan outcome, 1)
	go func() {
		inflight <- execute(context.Background(), s.Execute, supervisor.Request{Plugin: "sleeper", Command: host.Command{Action: "sleep_ctx", Params: map[string]string{"seconds": "30", "started": started}}})
	}()
	waitStarted(t, started)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Only signal the pid while it still runs our binary: once reaped, it may be
		// someone else's.
		if runs(pid, path) && alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGCONT)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	waitFor(t, 15*time.Second, "a new sleeper child", func() bool {
		st := statusOf(t, s, "sleeper")
		return st.State == supervisor.StateRunning && st.Pid != 0 && st.Pid != pid
	})
	st := statusOf(t, s, "sleeper")
	if st.Restarts != 1 || !strings.Contains(st.LastError, "no answer to 2 health pings") {
		t.Errorf("after the health restart: %+v", st)
	}
	waitFor(t, 2*time.Second, "the stopped child to be gone", func() bool { return !alive(pid) })
	select {
	case o := <-inflight:
		var crashed *supervisor.CrashedError
		if !errors.As(o.err, &crashed) || o.err.Error() != "plugin crashed: no answer to 2 health pings" {
			t.Errorf("command in flight on the hung child: want \"plugin crashed: no answer to 2 health pings\": %s", o)
		}
	case <-time.After(10 * time.Second):
		t.Error("the command in flight on the hung child did not end")
	}
	mustOK(t, s, "sleeper", "ok", nil, "ok|sleeper")
}

// blockingExecutor lets a test know when a command has reached the supervisor.
type blockingExecutor struct {
	sup     *supervisor.Supervisor
	entered chan string
}

func (b *blockingExecutor) Execute(ctx context.Context, req supervisor.Request, onRows func([]string) error) (sdk.Result, error) {
	b.entered <- req.ID
	return b.sup.Execute(ctx, req, onRows)
}

// TestDispatchQueueFull: with one slot and a queue of one, a third concurrent command
// is refused at once with ErrQueueFull while the other two succeed.
func TestDispatchQueueFull(t *testing.T) {
	t.Parallel()
	s := newSupervisor(t, supervisor.Options{}, sleeperBin)
	runningPid(t, s, "sleeper")
	ex := &blockingExecutor{sup: s, entered: make(chan string, 3)}
	d := dispatch.New(ex, dispatch.Options{PerPlugin: 1, QueueSize: 1})
	sleep := func(id string) supervisor.Request {
		return supervisor.Request{Plugin: "sleeper", Command: host.Command{ID: id, Action: "sleep_ctx", Params: map[string]string{"seconds": "1.5"}}, Timeout: 30 * time.Second}
	}
	results := make(chan outcome, 3)
	go func() { results <- execute(context.Background(), through(d), sleep("first")) }()
	if id := <-ex.entered; id != "first" {
		t.Fatalf("entered %s first", id)
	}
	// The slot is taken: of the next two, one waits in the queue and the other is
	// refused. Which one is a race, so both are started together.
	for _, id := range []string{"second", "third"} {
		go func() { results <- execute(context.Background(), through(d), sleep(id)) }()
	}
	var ok, full int
	for range 3 {
		o := <-results
		switch {
		case errors.Is(o.err, dispatch.ErrQueueFull):
			full++
			// The dispatcher has no path that waits before refusing: the error
			// itself says it came at once.
			if o.err.Error() != "agent overloaded: command queue full" {
				t.Errorf("refused command: want the queue-full error: %s", o)
			}
		case o.err == nil && o.res.Code == 0 && strings.Join(o.rows, ",") == "slept|1.5s":
			ok++
		default:
			t.Errorf("unexpected outcome: %s", o)
		}
	}
	if ok != 2 || full != 1 {
		t.Errorf("want 2 successes and 1 ErrQueueFull, have %d and %d", ok, full)
	}
}

// TestDispatchConcurrent: eight concurrent commands through one dispatcher (default
// options) and one supervisor all succeed with their own rows.
func TestDispatchConcurrent(t *testing.T) {
	t.Parallel()
	s := newSupervisor(t, supervisor.Options{}, sleeperBin, tagsBin)
	d := dispatch.New(s, dispatch.Options{})
	var wg sync.WaitGroup
	outs := make([]outcome, 8)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := supervisor.Request{Plugin: "sleeper", Command: host.Command{ID: fmt.Sprint(i), Action: "rows", Params: map[string]string{"n": fmt.Sprint(100 * (i + 1))}}, Timeout: 60 * time.Second}
			if i%2 == 1 {
				req = supervisor.Request{Plugin: "tags", Command: host.Command{ID: fmt.Sprint(i), Action: "set", Params: map[string]string{"key": fmt.Sprint("k", i), "value": fmt.Sprint(i)}}, Timeout: 60 * time.Second}
			}
			outs[i] = execute(context.Background(), through(d), req)
		}()
	}
	wg.Wait()
	for i, o := range outs {
		if o.err != nil || o.res.Code != 0 {
			t.Errorf("command %d: %s", i, o)
			continue
		}
		if i%2 == 1 {
			if want := fmt.Sprintf("tag_set|k%d|%d", i, i); strings.Join(o.rows, ",") != want {
				t.Errorf("command %d: rows %q, want %q", i, o.rows, want)
			}
			continue
		}
		if len(o.rows) != 100*(i+1) || o.rows[0] != "row|0|abcdefghijklmnopqrstuvwxyz" || o.rows[len(o.rows)-1] != fmt.Sprintf("row|%d|abcdefghijklmnopqrstuvwxyz", len(o.rows)-1) {
			t.Errorf("command %d: %d rows, want %d in order", i, len(o.rows), 100*(i+1))
		}
	}
	mustOK(t, s, "tags", "count", nil, "count|4")
}

// TestSupervisorErrors: the typed errors for an unknown plugin and a refused binary.
func TestSupervisorErrors(t *testing.T) {
	t.Parallel()
	dir := copyPluginDir(t, tagsBin, sleeperBin)
	f, err := os.OpenFile(filepath.Join(dir, sleeperBin), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("x"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	s := newSupervisor(t, supervisor.Options{PluginDir: dir})
	o := execute(context.Background(), s.Execute, supervisor.Request{Plugin: "nope", Command: host.Command{Action: "x"}})
	if !errors.Is(o.err, supervisor.ErrUnknownPlugin) || o.err.Error() != "plugin not found: nope" {
		t.Errorf("unknown plugin: %s", o)
	}
	o = execute(context.Background(), s.Execute, supervisor.Request{Plugin: "sleeper", Command: host.Command{Action: "ok"}})
	var refused *supervisor.RefusedError
	if !errors.As(o.err, &refused) || refused.Path != filepath.Join(dir, sleeperBin) ||
		!strings.Contains(refused.Reason, "does not match catalog.json ("+built.sums[sleeperBin]+"); if you trust this binary, run `yuzu-agent plugins add "+filepath.Join(dir, sleeperBin)+"`") {
		t.Errorf("tampered binary: %s", o)
	}
	if st := statusOf(t, s, "sleeper"); st.State != supervisor.StateRefused {
		t.Errorf("tampered binary's state: %+v", st)
	}
	mustOK(t, s, "tags", "count", nil, "count|0")
}

// TestTagsLoadFailedUntilWrite: in one plugin process, a corrupt tags.json makes every
// answer CONSTRAINED / PARTIAL / tags:load_failed until the next successful write
// (docs/tags.md).
func TestTagsLoadFailedUntilWrite(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	writeFile(t, filepath.Join(data, "tags.json"), `{"broken"`, 0o644)
	s := newSupervisor(t, supervisor.Options{DataDir: data}, tagsBin)
	loadFailed := sdk.Partial("tags:load_failed")
	steps := []struct {
		action string
		params map[string]string
		rows   string
		res    sdk.Result
	}{
		{"count", nil, "count|0", loadFailed},
		{"check", map[string]string{"key": "a"}, "tag_exists|a|false", loadFailed},
		{"set", map[string]string{"key": "a", "value": "1"}, "tag_set|a|1", sdk.Done()},
		{"get_all", nil, "tag|a|1,count|1", sdk.Done()},
	}
	for _, st := range steps {
		o := execute(context.Background(), s.Execute, supervisor.Request{Plugin: "tags", Command: host.Command{Action: st.action, Params: st.params}, Timeout: 20 * time.Second})
		if o.err != nil || o.res != st.res || strings.Join(o.rows, ",") != st.rows {
			t.Errorf("%s: want rows %q and %+v: %s", st.action, st.rows, st.res, o)
		}
	}
}

// TestSupervisorNoStrayChildren: concurrent first commands start one child per
// plugin, and Close leaves none.
func TestSupervisorNoStrayChildren(t *testing.T) {
	t.Parallel()
	dir := pluginDir(t, sleeperBin)
	s := newSupervisor(t, supervisor.Options{PluginDir: dir}, sleeperBin)
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Not mustOK: t.Fatal may only be called from the test's goroutine.
			o := execute(context.Background(), s.Execute, supervisor.Request{Plugin: "sleeper", Command: host.Command{Action: "ok"}, Timeout: 30 * time.Second})
			if o.err != nil || strings.Join(o.rows, ",") != "ok|sleeper" {
				t.Errorf("concurrent first command: %s", o)
			}
		}()
	}
	wg.Wait()
	path := filepath.Join(dir, sleeperBin)
	if procs := processesOf(path); len(procs) != 1 {
		t.Errorf("want one sleeper child, have %v", procs)
	}
	if st := statusOf(t, s, "sleeper"); st.Restarts != 0 {
		t.Errorf("status after concurrent starts: %+v", st)
	}
	s.Close()
	if procs := processesOf(path); len(procs) != 0 {
		t.Errorf("children left after Close: %v", procs)
	}
	o := execute(context.Background(), s.Execute, supervisor.Request{Plugin: "sleeper", Command: host.Command{Action: "ok"}})
	if o.err == nil {
		t.Errorf("a command after Close ran: %s", o)
	}
}

// TestSupervisorFailedPeriodEnds: once the failed period is over, the plugin is
// started again.
func TestSupervisorFailedPeriodEnds(t *testing.T) {
	t.Parallel()
	s := newSupervisor(t, supervisor.Options{BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond,
		RestartBudget: 1, FailedFor: 1500 * time.Millisecond}, crasherBin)
	for i := 1; i <= 2; i++ {
		o := execute(context.Background(), s.Execute, supervisor.Request{Plugin: "crasher", Command: host.Command{Action: "kill"}, Timeout: 20 * time.Second})
		var crashed *supervisor.CrashedError
		if !errors.As(o.err, &crashed) {
			t.Fatalf("crash %d: want *CrashedError: %s", i, o)
		}
	}
	o := execute(context.Background(), s.Execute, supervisor.Request{Plugin: "crasher", Command: host.Command{Action: "ok"}})
	var failed *supervisor.FailedError
	if !errors.As(o.err, &failed) || !strings.Contains(o.err.Error(), "restarted 1 times within 60s") {
		t.Fatalf("want *FailedError: %s", o)
	}
	time.Sleep(time.Until(failed.Until) + 100*time.Millisecond)
	mustOK(t, s, "crasher", "ok", nil, "ok|crasher")
	if st := statusOf(t, s, "crasher"); st.State != supervisor.StateRunning {
		t.Errorf("after the failed period: %+v", st)
	}
}

// TestSupervisorCancelledHungHandler: ARCHITECTURE says "Cancelling a command (or its
// deadline) cancels the handler's ctx; a handler that ignores it is killed by the
// supervisor after the grace period." Here a command whose handler ignores ctx is
// cancelled by its caller; after the grace period the handler must not still be
// running in the plugin.
func TestSupervisorCancelledHungHandler(t *testing.T) {
	t.Parallel()
	s := newSupervisor(t, supervisor.Options{Grace: 300 * time.Millisecond}, sleeperBin)
	runningPid(t, s, "sleeper")
	ctx, cancel := context.WithCancel(context.Background())
	started := startMarker(t)
	go func() {
		// Cancel once the handler runs, so it is the handler that ignores it.
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Lstat(started); err == nil {
				break
			}
		}
		cancel()
	}()
	o := execute(ctx, s.Execute, supervisor.Request{Plugin: "sleeper", Command: host.Command{Action: "sleep", Params: map[string]string{"seconds": "30", "started": started}}, Timeout: time.Minute})
	if !errors.Is(o.err, context.Canceled) {
		t.Fatalf("want context.Canceled: %s", o)
	}
	if _, err := os.Lstat(started); err != nil {
		t.Fatalf("the handler never started: %v", err)
	}
	// Grace, then a kill and a restart; the bound allows for a loaded machine.
	waitFor(t, 15*time.Second, "no sleep handler running", func() bool {
		o := execute(context.Background(), s.Execute, supervisor.Request{Plugin: "sleeper", Command: host.Command{Action: "active"}, Timeout: 5 * time.Second})
		return o.err == nil && strings.Join(o.rows, ",") == "active|0"
	})
}

// TestSupervisorTimeoutMessageWithDeadlineOnly: a Request may carry only a Deadline
// (the submitter queued it for part of its time); the timeout answer must still name
// a real duration, not "plugin timed out after 0s".
func TestSupervisorTimeoutMessageWithDeadlineOnly(t *testing.T) {
	t.Parallel()
	s := newSupervisor(t, supervisor.Options{Grace: 200 * time.Millisecond}, sleeperBin)
	runningPid(t, s, "sleeper")
	o := execute(context.Background(), s.Execute, supervisor.Request{Plugin: "sleeper", Command: host.Command{Action: "sleep", Params: map[string]string{"seconds": "30"}, Deadline: time.Now().Add(time.Second)}})
	var timeout *supervisor.TimeoutError
	if !errors.As(o.err, &timeout) {
		t.Fatalf("want *TimeoutError: %s", o)
	}
	if timeout.Deadline <= 0 || o.err.Error() == "plugin timed out after 0s" {
		t.Errorf("timeout answer names no real duration: %q", o.err.Error())
	}
}

// TestPluginLogsReachTheAgentLog: a plugin's info lines show at the agent's default
// level, attributed to the plugin and the command id; a stray print on stdout shows too;
// go-plugin's start and stop chatter does not.
func TestPluginLogsReachTheAgentLog(t *testing.T) {
	t.Parallel()
	logs := &lockedBuffer{}
	log := hclog.New(&hclog.LoggerOptions{Name: "yuzu-agent", Level: hclog.Info, Output: logs, IndependentLevels: true})
	s := newSupervisor(t, supervisor.Options{Logger: log, LogLevel: "info"}, crasherBin)
	o := execute(context.Background(), s.Execute, supervisor.Request{Plugin: "crasher", Command: host.Command{ID: "cmd-7", Action: "log"}, Timeout: 20 * time.Second})
	if o.err != nil || strings.Join(o.rows, ",") != "logged|yes" {
		t.Fatalf("log action: %s", o)
	}
	// The plugin's log lines and its stray stdout reach the agent over two different
	// pipes, so either may arrive first: wait for both.
	waitFor(t, 5*time.Second, "the plugin's log line and its stray line in the log", func() bool {
		text := logs.String()
		return strings.Contains(text, "crasher says hello") && strings.Contains(text, "stray line from a handler")
	})
	text := logs.String()
	var hello, stray string
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.Contains(line, "crasher says hello"):
			hello = line
		case strings.Contains(line, "stray line from a handler"):
			stray = line
		}
	}
	for _, want := range []string{"[INFO]", "yuzu-agent.crasher:", "command_id=cmd-7", "action=log", "answer=42"} {
		if !strings.Contains(hello, want) {
			t.Errorf("plugin log line %q lacks %q", hello, want)
		}
	}
	if !strings.Contains(stray, "[INFO]") || !strings.Contains(stray, "yuzu-agent.crasher:") || !strings.Contains(stray, "stream=stdout") {
		t.Errorf("stray stdout line: %q", stray)
	}
	for _, chatter := range []string{"starting plugin", "plugin started", "waiting for RPC address", "plugin process exited"} {
		if strings.Contains(text, chatter) {
			t.Errorf("go-plugin chatter %q at info level:\n%s", chatter, text)
		}
	}
}

// TestPluginProcessName: a plugin runs from a sealed memory copy executed as
// /proc/self/fd/N, which the kernel would name it after ("9"); the SDK names the
// process, and every thread of it, after its binary, so top, ps -o comm, ps -L, perf
// and an OOM report show the plugin.
func TestPluginProcessName(t *testing.T) {
	t.Parallel()
	dir := pluginDir(t, sleeperBin)
	s := newSupervisor(t, supervisor.Options{PluginDir: dir}, sleeperBin)
	pid := runningPid(t, s, "sleeper")
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		t.Fatal(err)
	}
	want := sleeperBin
	if len(want) > 15 {
		want = want[:15] // the kernel keeps 15 bytes
	}
	if got := strings.TrimSuffix(string(comm), "\n"); got != want {
		t.Errorf("the plugin child is named %q, want %q", got, want)
	}
	// Every thread, the ones the runtime started before the SDK's init among them
	// (ps -L, top -H and perf show threads).
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		c, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/comm")
		if err != nil {
			continue // the thread ended
		}
		if got := strings.TrimSuffix(string(c), "\n"); got != want {
			t.Errorf("thread %s of %d threads is named %q, want %q", task.Name(), len(tasks), got, want)
		}
	}
}
