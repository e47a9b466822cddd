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
	"strconv"
	"strings"
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
}

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
// subscribed.
func (f *fleet) agent(extra ...string) *agentProc {
	f.t.Helper()
	a := startAgentProc(f.t, f.args(extra...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
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
	cmd := exec.Command(binPath(agentBin), args...)
	cmd.Env = baseEnv()
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

// do sends cmd and waits for its terminal response.
func (f *fleet) do(ctx context.Context, cmd *agentv1.CommandRequest) fleetserver.Result {
	f.t.Helper()
	r, err := f.srv.Do(ctx, cmd)
	if err != nil {
		f.t.Fatalf("command %q: %v (so far %+v)", cmd.GetCommandId(), err, r)
	}
	return r
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
