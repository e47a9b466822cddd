package session

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/agent/internal/journal"
	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
)

// The end-to-end tests with real binaries live in the integration module; this one
// runs a Session against an in-process server with a fake plugin, so that the race
// detector sees the connection, command and stop paths.

// testServer accepts every registration and pushes the commands of in.
type testServer struct {
	agentv1.UnimplementedAgentServiceServer
	in chan *agentv1.CommandRequest

	mu   sync.Mutex
	got  map[string][]*agentv1.CommandResponse
	regs int
}

func (ts *testServer) Register(context.Context, *agentv1.RegisterRequest) (*agentv1.RegisterResponse, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.regs++
	return &agentv1.RegisterResponse{Accepted: true, SessionId: fmt.Sprint("s", ts.regs)}, nil
}

func (ts *testServer) Subscribe(stream agentv1.AgentService_SubscribeServer) error {
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for {
			r, err := stream.Recv()
			if err != nil {
				return
			}
			ts.mu.Lock()
			ts.got[r.GetCommandId()] = append(ts.got[r.GetCommandId()], r)
			ts.mu.Unlock()
		}
	}()
	for {
		select {
		case c := <-ts.in:
			if err := stream.Send(c); err != nil {
				return err
			}
		case <-ended: // the agent half-closed the stream
			return nil
		case <-stream.Context().Done():
			return nil
		}
	}
}

// terminal returns the terminal answers of id.
func (ts *testServer) terminal(id string) []*agentv1.CommandResponse {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var out []*agentv1.CommandResponse
	for _, r := range ts.got[id] {
		if r.GetStatus() != agentv1.CommandResponse_RUNNING {
			out = append(out, r)
		}
	}
	return out
}

// blockingPlugins answers "ok" at once and blocks "block" until cancelled.
type blockingPlugins struct{ fakePlugins }

func (blockingPlugins) Execute(ctx context.Context, req supervisor.Request, onRows func([]string) error) (sdk.Result, error) {
	if req.Action == "block" {
		<-ctx.Done()
		return sdk.Result{}, ctx.Err()
	}
	if err := onRows([]string{"ok|" + req.ID}); err != nil {
		return sdk.Result{}, err
	}
	return sdk.Result{Status: sdk.StatusOK}, nil
}
func (blockingPlugins) Describe(context.Context, string) (host.Manifest, error) {
	return host.Manifest{Name: "p", Version: "1", Actions: []sdk.Action{{Name: "ok"}, {Name: "block"}}}, nil
}

// serveTest starts a testServer on loopback and opens a journal, both ended with the
// test, and returns the server, its address and the journal.
func serveTest(t *testing.T) (*testServer, string, *journal.Journal) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{in: make(chan *agentv1.CommandRequest), got: map[string][]*agentv1.CommandResponse{}}
	g := grpc.NewServer()
	agentv1.RegisterAgentServiceServer(g, ts)
	go func() { _ = g.Serve(l) }()
	t.Cleanup(g.Stop)
	j, err := journal.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return ts, l.Addr().String(), j
}

func TestSessionRunAndStop(t *testing.T) {
	ts, addr, j := serveTest(t)
	s := New(Options{Server: addr, Plugins: blockingPlugins{}, Journal: j, StopWait: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	send := func(c *agentv1.CommandRequest) {
		select {
		case ts.in <- c:
		case <-time.After(10 * time.Second):
			t.Fatal("the agent did not subscribe")
		}
	}
	// A generous bound for each answer: under Wine (the Windows leg) on a loaded
	// machine, one answer among the 200 was seen to take 17 s after the one before,
	// every journal write being several wine server round trips.
	wait := func(id string, n int) []*agentv1.CommandResponse {
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if got := ts.terminal(id); len(got) >= n {
				return got
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("%s: %d terminal answers, want %d", id, len(ts.terminal(id)), n)
		return nil
	}
	for i := range 3 {
		send(&agentv1.CommandRequest{CommandId: fmt.Sprint("b", i), Plugin: "p", Action: "block"})
	}
	for i := range 200 {
		send(&agentv1.CommandRequest{CommandId: fmt.Sprint("c", i), Plugin: "p", Action: "ok"})
	}
	for i := range 200 {
		got := wait(fmt.Sprint("c", i), 1)
		if got[0].GetStatus() != agentv1.CommandResponse_SUCCESS || got[0].GetPluginResultStatus() != agentv1.CommandResponse_PLUGIN_RESULT_OK {
			t.Fatalf("c%d: %v", i, got[0])
		}
	}
	send(&agentv1.CommandRequest{CommandId: "c7", Plugin: "p", Action: "ok"})
	if got := wait("c7", 2); got[1].GetStatus() != agentv1.CommandResponse_SUCCESS {
		t.Errorf("replay %v", got[1])
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		got := ts.terminal(fmt.Sprint("b", i))
		if len(got) != 1 || got[0].GetStatus() != agentv1.CommandResponse_FAILURE || got[0].GetError().GetCode() != "command_cancelled" {
			t.Errorf("b%d: %v", i, got)
		}
	}
	if len(j.Unsent()) != 0 {
		t.Errorf("%d answers left unsent after a graceful stop", len(j.Unsent()))
	}
}

// stuckPlugins never returns from "stuck" until release is closed, whatever its
// context says, and then tries one more row.
type stuckPlugins struct {
	fakePlugins
	release chan struct{}
	late    chan error // what the late row got
}

func (p stuckPlugins) Execute(ctx context.Context, req supervisor.Request, onRows func([]string) error) (sdk.Result, error) {
	if err := onRows([]string{"before|" + req.ID}); err != nil {
		return sdk.Result{}, err
	}
	<-p.release
	err := onRows([]string{"after|" + req.ID})
	p.late <- err
	return sdk.Result{}, err
}

func (stuckPlugins) Describe(context.Context, string) (host.Manifest, error) {
	return host.Manifest{Name: "p", Version: "1", Actions: []sdk.Action{{Name: "stuck"}}}, nil
}

// A command whose dispatch never returns is answered all the same, AnswerGrace past
// its deadline: its rows so far, an error row, TIMEOUT with command_unanswered. What
// the plugin writes later is refused and never reaches the server.
func TestSessionAnswersAStuckCommand(t *testing.T) {
	ts, addr, j := serveTest(t)
	p := stuckPlugins{release: make(chan struct{}), late: make(chan error, 1)}
	s := New(Options{Server: addr, Plugins: p, Journal: j,
		Timeout: 100 * time.Millisecond, AnswerGrace: 200 * time.Millisecond, StopWait: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	select {
	case ts.in <- &agentv1.CommandRequest{CommandId: "s", Plugin: "p", Action: "stuck"}:
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not subscribe")
	}
	sent := time.Now()
	var term []*agentv1.CommandResponse
	for deadline := time.Now().Add(10 * time.Second); len(term) == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		term = ts.terminal("s")
	}
	answered := time.Since(sent)
	if len(term) != 1 || term[0].GetStatus() != agentv1.CommandResponse_TIMEOUT || term[0].GetError().GetCode() != "command_unanswered" {
		t.Fatalf("terminal %v, want one TIMEOUT command_unanswered", term)
	}
	close(p.release)
	if err := <-p.late; !errors.Is(err, errAnswered) {
		t.Errorf("a row after the answer: %v, want errAnswered", err)
	}
	var outputs []string
	ts.mu.Lock()
	for _, r := range ts.got["s"] {
		if r.GetStatus() == agentv1.CommandResponse_RUNNING {
			outputs = append(outputs, r.GetOutput())
		}
	}
	ts.mu.Unlock()
	got := strings.Split(strings.Join(outputs, "\n"), "\n")
	want := []string{"before|s", "error|no answer from plugin p within 0.2s of the command's 0.1s deadline"}
	if len(got) != 3 || strings.Join(got[:2], "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows %q, want %q and the timing", got, want)
	}
	// The timing says how long the command was with its plugin: from when it reached
	// the plugin (after its start record is on disk, which a loaded machine or Wine may
	// take most of the 100 ms deadline to write) to the answer. So it is some time, no
	// more than the test saw pass; a floor would guess the machine's speed.
	ms, err := strconv.Atoi(strings.TrimPrefix(got[2], timingPrefix))
	if err != nil || ms <= 0 || time.Duration(ms)*time.Millisecond > answered {
		t.Errorf("timing %q, want more than 0 and at most the %d ms the answer took", got[2], answered.Milliseconds())
	}
}

// progressPlugins reports progress through the request's OnProgress, as a plugin's
// Output.Progress reaches the supervisor, then writes a row.
type progressPlugins struct{ fakePlugins }

func (progressPlugins) Execute(_ context.Context, req supervisor.Request, onRows func([]string) error) (sdk.Result, error) {
	if req.OnProgress == nil {
		return sdk.Result{}, errors.New("the session does not take progress")
	}
	for i := range uint64(50) {
		req.OnProgress(i+1, 50, "files")
	}
	if err := onRows([]string{"done|" + req.ID}); err != nil {
		return sdk.Result{}, err
	}
	return sdk.Result{Status: sdk.StatusOK}, nil
}

// The fleet link relays a command's progress as RUNNING __progress__ messages, before
// its timing and terminal answer and never after.
func TestSessionRelaysProgress(t *testing.T) {
	ts, addr, j := serveTest(t)
	s := New(Options{Server: addr, Plugins: progressPlugins{}, Journal: j, StopWait: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	select {
	case ts.in <- &agentv1.CommandRequest{CommandId: "p1", Plugin: "p", Action: "scan"}:
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not subscribe")
	}
	for deadline := time.Now().Add(30 * time.Second); len(ts.terminal("p1")) == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
	}
	ts.mu.Lock()
	got := append([]*agentv1.CommandResponse(nil), ts.got["p1"]...)
	ts.mu.Unlock()
	var progress []string
	terminalAt := -1
	for i, r := range got {
		switch {
		case r.GetStatus() != agentv1.CommandResponse_RUNNING:
			terminalAt = i
		case strings.HasPrefix(r.GetOutput(), progressKind+"|"):
			if terminalAt >= 0 {
				t.Errorf("progress %q after the terminal answer", r.GetOutput())
			}
			progress = append(progress, r.GetOutput())
		}
	}
	if terminalAt < 0 || got[terminalAt].GetStatus() != agentv1.CommandResponse_SUCCESS {
		t.Fatalf("answers %v, want a SUCCESS terminal", got)
	}
	// Fifty reports in a tight loop: the first goes, the rest fall within its second
	// (a machine slow enough to spread them over seconds lets a few more through).
	if len(progress) == 0 || len(progress) >= 50 || progress[0] != "__progress__|done=1|total=50|unit=files" {
		t.Errorf("progress messages %q, want the first report and far fewer than 50", progress)
	}
}
