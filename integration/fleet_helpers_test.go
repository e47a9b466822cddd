//go:build linux

package integration

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/agent/fleetpb/commonv1"
	"github.com/yuzugo/yuzu/integration/fleetserver"
)

// fleet is one test fleet server (mutual TLS, certificates made for the test) and one
// installed agent's plugin and data dirs.
type fleet struct {
	t   testing.TB
	pki *fleetserver.PKI
	srv *fleetserver.Server
	w   *world

	mu      sync.Mutex
	last    *agentProc    // the agent started last: asked for a goroutine dump when a command goes unanswered
	timeout time.Duration // its --timeout
}

// Bounds on how late an answer may come (docs/fleet.md): the agent answers every
// command it runs at the latest answerGrace past its deadline. transportSlack is
// the test's allowance for the trip between agent and server on a loaded machine.
const (
	answerGrace    = 10 * time.Second
	transportSlack = 5 * time.Second
)

// newFleet starts a server with o (its TLS is set to the test PKI's mutual TLS) and
// makes a world holding the named plugins.
func newFleet(t testing.TB, o fleetserver.Options, plugins ...string) *fleet {
	t.Helper()
	return newFleetTLS(t, o, nil, plugins...)
}

// newFleetTLS is newFleet with a change to the server's TLS configuration.
func newFleetTLS(t testing.TB, o fleetserver.Options, tweak func(*tls.Config), plugins ...string) *fleet {
	t.Helper()
	pki, err := fleetserver.NewPKI(filepath.Join(t.TempDir(), "pki"), "fleet")
	if err != nil {
		t.Fatal(err)
	}
	o.TLS = pki.ServerTLS()
	if tweak != nil {
		tweak(o.TLS)
	}
	srv, err := fleetserver.Start("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return &fleet{t: t, pki: pki, srv: srv, w: newWorld(t, plugins...)}
}

// args are the agent's arguments for `run` against this server with mutual TLS, then
// extra.
func (f *fleet) args(extra ...string) []string {
	return append([]string{"--plugin-dir", f.w.pluginDir, "--data-dir", f.w.dataDir, "run",
		"--server", f.srv.Addr(), "--ca-cert", f.pki.CA,
		"--client-cert", f.pki.ClientCert, "--client-key", f.pki.ClientKey}, extra...)
}

// agent starts `yuzu-agent run` with the fleet's arguments and waits until it has
// subscribed. It stops the fleet's own test on failure, so only that test's goroutine
// may call it.
func (f *fleet) agent(extra ...string) *agentProc {
	f.t.Helper()
	return f.agentEnv(baseEnv(), extra...)
}

// agentEnv is agent with the agent's environment.
func (f *fleet) agentEnv(env []string, extra ...string) *agentProc {
	f.t.Helper()
	a := startAgentEnv(f.t, env, f.args(extra...)...)
	timeout := 600 * time.Second
	for i, arg := range extra {
		if arg == "--timeout" && i+1 < len(extra) {
			d, err := time.ParseDuration(extra[i+1])
			if n, nerr := strconv.Atoi(extra[i+1]); nerr == nil {
				d, err = time.Duration(n)*time.Second, nil
			}
			if err != nil {
				f.t.Fatalf("--timeout %q: %v", extra[i+1], err)
			}
			timeout = d
		}
	}
	f.mu.Lock()
	f.last, f.timeout = a, timeout
	f.mu.Unlock()
	// run waits up to 30 s for its plugins to start, so that its registration
	// describes them, before it connects; at load 45 a start ran out of its 10 s and
	// that whole wait passed. The bound is well beyond it.
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if err := f.srv.WaitSubscribed(ctx); err != nil {
		f.t.Fatalf("the agent did not subscribe: %v\n%s", err, a.stderr.String())
	}
	return a
}

// agentProc is one running agent process.
type agentProc struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan struct{}
	code   int
}

// startAgentProc starts the agent with args and kills it when the test ends, if it is
// still running.
func startAgentProc(t testing.TB, args ...string) *agentProc {
	t.Helper()
	return startAgentEnv(t, baseEnv(), args...)
}

// startAgentEnv is startAgentProc with the agent's environment.
func startAgentEnv(t testing.TB, env []string, args ...string) *agentProc {
	t.Helper()
	cmd := exec.Command(binPath(agentBin), args...)
	cmd.Env = env
	a := &agentProc{cmd: cmd, stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = a.stderr, a.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := cmd.Wait()
		var exitErr *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exitErr):
			a.code = exitErr.ExitCode()
		default:
			a.code = -1
		}
		close(a.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-a.done
		if t.Failed() {
			t.Logf("agent log:\n%s", a.stderr.String())
		}
	})
	return a
}

// wait waits for the agent to exit and returns its exit code.
func (a *agentProc) wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	select {
	case <-a.done:
		return a.code
	case <-time.After(timeout):
		t.Fatalf("the agent did not exit within %s\n%s", timeout, a.stderr.String())
		return 0
	}
}

// stop sends SIGTERM and returns the exit code.
func (a *agentProc) stop(t testing.TB) int {
	t.Helper()
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	return a.wait(t, 30*time.Second)
}

// running reports whether the agent is still running.
func (a *agentProc) running() bool {
	select {
	case <-a.done:
		return false
	default:
		return true
	}
}

// rss is the agent's resident set size in bytes.
func (a *agentProc) rss(t testing.TB) int64 {
	t.Helper()
	return procStatusBytes(t, a.cmd.Process.Pid, "VmRSS")
}

// procStatusBytes reads a size field of /proc/<pid>/status ("VmRSS", "VmHWM") in
// bytes.
func procStatusBytes(t testing.TB, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s for pid %d", field, pid)
	return 0
}

// command builds a CommandRequest; kv are key=value parameters.
func command(id, plugin, action string, kv ...string) *agentv1.CommandRequest {
	c := &agentv1.CommandRequest{CommandId: id, Plugin: plugin, Action: action, Parameters: map[string]string{}}
	for _, p := range kv {
		k, v, _ := strings.Cut(p, "=")
		c.Parameters[k] = v
	}
	return c
}

// millis is t as a wire timestamp.
func millis(t time.Time) *commonv1.Timestamp { return &commonv1.Timestamp{MillisEpoch: t.UnixMilli()} }

// testCtx is a context that ends with the test or after d.
func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// do sends cmd and waits for its terminal response. t is the calling test, a subtest
// passing its own: FailNow may only stop the test whose goroutine calls it. When no
// terminal comes, t fails with what did come and a goroutine dump of the agent, which
// shows where the command waited. An answer later than the command's delay, its
// deadline and the agent's grace fails t too.
func (f *fleet) do(t testing.TB, ctx context.Context, cmd *agentv1.CommandRequest) fleetserver.Result {
	t.Helper()
	start := time.Now()
	r, err := f.srv.Do(ctx, cmd)
	f.mu.Lock()
	a, timeout := f.last, f.timeout
	f.mu.Unlock()
	wait := func(secs int32) time.Duration { return time.Duration(min(max(secs, 0), 300)) * time.Second }
	limit := timeout + answerGrace + transportSlack + wait(cmd.GetDelaySeconds()) + wait(cmd.GetStaggerSeconds())
	if took := time.Since(start); err == nil && timeout > 0 && took > limit {
		t.Errorf("command %q answered after %s, more than its %s deadline plus the agent's %s grace (and %s for the trip)",
			cmd.GetCommandId(), took.Round(time.Millisecond), timeout, answerGrace, transportSlack)
	}
	if err != nil {
		dump := "(no agent started)"
		if a != nil {
			dump = a.goroutines()
		}
		t.Fatalf("command %q: %v (so far %+v)\nagent goroutines:\n%s\ntest fleet server goroutines:\n%s", cmd.GetCommandId(), err, r, dump, serverGoroutines())
	}
	return r
}

// serverGoroutines are the stacks of this test binary's goroutines that are in the
// test fleet server or in a gRPC transport (the server's connections among them): the
// other half of "where did the command wait?".
func serverGoroutines() string {
	var out []string
	for _, g := range strings.Split(stacks(), "\n\n") {
		if strings.Contains(g, "fleetserver") || strings.Contains(g, "grpc/internal/transport") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

// stacks is every goroutine's stack in this process.
func stacks() string {
	for n := 1 << 20; ; n *= 2 {
		buf := make([]byte, n)
		if k := runtime.Stack(buf, true); k < n {
			return string(buf[:k])
		}
	}
}

// dumpMarker begins the agent's goroutine dump in its log.
const dumpMarker = "goroutine dump:"

// goroutines asks the agent for a goroutine dump (SIGUSR1, docs/agent.md) and returns
// it as the agent logged it, or why there is none. The agent keeps running.
func (a *agentProc) goroutines() string {
	if !a.running() {
		return "(the agent has exited)"
	}
	before := strings.Count(a.stderr.String(), dumpMarker)
	if err := a.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		return "(SIGUSR1: " + err.Error() + ")"
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if log := a.stderr.String(); strings.Count(log, dumpMarker) > before {
			return log[strings.LastIndex(log, dumpMarker):]
		}
	}
	return "(no goroutine dump within 10s)"
}

// expectTerminal fails the test unless r ended with status and exit code, rows exactly
// want (nil: none) and, for a command that ran, a timing message.
func expectResult(t *testing.T, r fleetserver.Result, status agentv1.CommandResponse_Status, exitCode int32, want ...string) {
	t.Helper()
	term := r.Terminal
	if term == nil {
		t.Fatalf("no terminal response (rows %q)", r.Rows)
	}
	if term.GetStatus() != status || term.GetExitCode() != exitCode {
		t.Errorf("terminal %v exit %d (output %q, error %v), want %v exit %d", term.GetStatus(), term.GetExitCode(), term.GetOutput(), term.GetError(), status, exitCode)
	}
	if term.GetSentAt().GetMillisEpoch() <= 0 {
		t.Errorf("terminal response without sent_at")
	}
	if status != agentv1.CommandResponse_REJECTED {
		if term.GetOutput() != "" {
			t.Errorf("terminal output %q, want empty (rows travel as RUNNING)", term.GetOutput())
		}
		if !timingRE.MatchString(r.Timing) {
			t.Errorf("timing message %q, want __timing__|exec_ms=N", r.Timing)
		}
	} else if r.Timing != "" || len(r.Rows) != 0 {
		t.Errorf("a rejected command sent rows %q and timing %q", r.Rows, r.Timing)
	}
	if strings.Join(r.Rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows\n%q\nwant\n%q", r.Rows, want)
	}
	if r.Terminals != 1 {
		t.Errorf("%d terminal responses, want 1", r.Terminals)
	}
}

// expectRejected fails the test unless r is one REJECTED answer with output reason.
func expectRejected(t *testing.T, r fleetserver.Result, reason string) {
	t.Helper()
	expectResult(t, r, agentv1.CommandResponse_REJECTED, 0)
	if got := r.Terminal.GetOutput(); got != reason {
		t.Errorf("rejected with %q, want %q", got, reason)
	}
}
