package session

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/agent/dispatch"
	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/agent/fleetpb/commonv1"
	"github.com/yuzugo/yuzu/agent/internal/journal"
	"github.com/yuzugo/yuzu/agent/internal/spool"
	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
)

func TestBackoff(t *testing.T) {
	top := func(k int64) int64 { return k - 1 } // the largest value rnd may return
	for _, c := range []struct {
		n    int
		want time.Duration
	}{
		{1, 2 * time.Second}, {2, 4 * time.Second}, {8, 256 * time.Second}, {9, 300 * time.Second},
		{62, 300 * time.Second}, {1000, 300 * time.Second},
	} {
		if got := backoff(c.n, time.Second, 300*time.Second, top); got != c.want {
			t.Errorf("backoff(%d) at most %s, want %s", c.n, got, c.want)
		}
	}
	if got := backoff(5, time.Second, 300*time.Second, func(int64) int64 { return 0 }); got != 0 {
		t.Errorf("full jitter reaches 0, got %s", got)
	}
	for range 1000 {
		if d := backoff(20, time.Second, 300*time.Second, uniform); d < 0 || d > 300*time.Second {
			t.Fatalf("backoff out of range: %s", d)
		}
	}
}

func TestWaitFor(t *testing.T) {
	s := &Session{o: Options{Rand: func(k int64) int64 { return k - 1 }}}
	for _, c := range []struct {
		stagger, delay int32
		want           time.Duration
	}{
		{0, 0, 0},
		{-5, -5, 0},
		{0, 7, 7 * time.Second},
		{10, 0, 10 * time.Second},
		{1 << 30, 0, 300 * time.Second},
		{1 << 30, 1 << 30, 600 * time.Second},
		{-1 << 31, 1<<31 - 1, 300 * time.Second},
	} {
		got := s.waitFor(&agentv1.CommandRequest{StaggerSeconds: c.stagger, DelaySeconds: c.delay})
		if got != c.want {
			t.Errorf("stagger %d delay %d: wait %s, want %s", c.stagger, c.delay, got, c.want)
		}
	}
}

func TestRelayChunks(t *testing.T) {
	s := &Session{out: spool.NewOutbox(1 << 30), life: context.Background(), spool: mustSpool(t)}
	r := &relay{s: s, id: "c"}
	row := strings.Repeat("r", 1000)
	batch := make([]string, 200) // 200,199 bytes joined
	for i := range batch {
		batch[i] = row
	}
	big := strings.Repeat("B", maxOutput+10)
	if err := r.rows(batch); err != nil {
		t.Fatal(err)
	}
	if err := r.rows([]string{big, "tail"}); err != nil {
		t.Fatal(err)
	}
	if err := r.end(""); err != nil {
		t.Fatal(err)
	}
	if err := r.rows([]string{"late"}); !errors.Is(err, errAnswered) {
		t.Errorf("a row after the end: %v, want errAnswered", err)
	}
	got := drainRunning(t, s, "c")
	var joined []string
	for _, out := range got {
		if len(out) > maxOutput && out != big {
			t.Errorf("a message of %d bytes holds more than one row", len(out))
		}
		joined = append(joined, strings.Split(out, "\n")...)
	}
	want := append(append(batch, big), "tail")
	if strings.Join(joined, "|") != strings.Join(want, "|") {
		t.Errorf("rows changed on the way: %d rows, want %d", len(joined), len(want))
	}
	if len(got) != 6 { // 65 + 65 + 65 + 5 rows of 1,000 bytes, the big row alone, then "tail"
		t.Errorf("%d messages, want 6 (sizes %v)", len(got), sizes(got))
	}
}

func sizes(ss []string) []int {
	var n []int
	for _, s := range ss {
		n = append(n, len(s))
	}
	return n
}

func TestOutboxBound(t *testing.T) {
	o := spool.NewOutbox(1000)
	msg := func(n int, terminal bool) spool.Msg {
		m := spool.Msg{Resp: &agentv1.CommandResponse{CommandId: "x", Output: strings.Repeat("o", n)}}
		if terminal {
			m.Kind = spool.KindTerminal
		}
		return m
	}
	ctx := context.Background()
	if err := o.Push(ctx, msg(5000, false)); err != nil {
		t.Fatal("an empty outbox must take any message:", err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := o.Push(short, msg(10, false)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a full outbox took a row message: %v", err)
	}
	if err := o.Push(short, msg(10, true)); err != nil {
		t.Errorf("a terminal answer must never wait: %v", err)
	}
	keep := msg(10, false)
	keep.Keep = true
	if err := o.Push(short, keep); err != nil {
		t.Errorf("a keep message must be queued when its context ends: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- o.Push(ctx, msg(10, false)) }()
	first, _ := o.Peek(ctx)
	if len(first.Resp.GetOutput()) != 5000 {
		t.Fatal("not in order")
	}
	o.Pop()
	if err := <-done; err != nil {
		t.Errorf("push after room was made: %v", err)
	}
	if o.Len() != 3 {
		t.Errorf("%d messages, want 3", o.Len())
	}
	for o.Len() > 0 {
		o.Pop()
	}
	if err := o.WaitEmpty(short); err != nil {
		t.Errorf("waitEmpty on an empty outbox: %v", err)
	}
}

// fakePlugins is a supervisor with one plugin, "p".
type fakePlugins struct{}

func (fakePlugins) Execute(context.Context, supervisor.Request, func([]string) error) (sdk.Result, error) {
	return sdk.Result{}, nil
}
func (fakePlugins) Describe(context.Context, string) (host.Manifest, error) {
	return host.Manifest{Name: "p"}, nil
}
func (fakePlugins) Plugins() []string           { return []string{"p"} }
func (fakePlugins) Has(name string) bool        { return name == "p" }
func (fakePlugins) Status() []supervisor.Status { return nil }

// The flood bound counts what the dispatcher admits as the dispatcher counts it (its
// slots per plugin and its queue, defaults included), plus the waiting room and the
// commands being answered: one set of numbers, not a second guess of its own.
func TestFloodBoundFromDispatcherLimits(t *testing.T) {
	for _, o := range []dispatch.Options{{}, {PerPlugin: 3, QueueSize: 5}} {
		s := New(Options{Plugins: fakePlugins{}, Dispatch: o})
		l := s.disp.Limits()
		if want := dispatch.New(fakePlugins{}, o).Limits(); l != want {
			t.Errorf("options %+v: the session's dispatcher has limits %+v, want %+v", o, l, want)
		}
		if got, want := s.maxInflight(), l.PerPlugin*1+l.QueueSize+maxWaiting+maxAnswering; got != want {
			t.Errorf("options %+v: flood bound %d, want %d", o, got, want)
		}
	}
	// With the defaults the bound is 2,048 plus the slots (docs/fleet.md).
	s := New(Options{Plugins: fakePlugins{}})
	if got, want := s.maxInflight(), 2048+s.disp.Limits().PerPlugin; got != want {
		t.Errorf("default flood bound %d, want %d", got, want)
	}
}

func TestInvalid(t *testing.T) {
	s := New(Options{Plugins: fakePlugins{}})
	params := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[strconv.Itoa(i)] = "v"
		}
		return m
	}
	for _, c := range []struct {
		req  *agentv1.CommandRequest
		want string
	}{
		{&agentv1.CommandRequest{Plugin: "p", Action: "a"}, ""},
		{&agentv1.CommandRequest{Plugin: "q\x1b", Action: "a"}, `plugin not found: q\x1b`},
		{&agentv1.CommandRequest{Plugin: strings.Repeat("p", 300), Action: "a"}, "plugin not found: " + strings.Repeat("p", 128) + "..."},
		{&agentv1.CommandRequest{Plugin: "p"}, "invalid command: empty action"},
		{&agentv1.CommandRequest{Plugin: "p", Action: strings.Repeat("a", 129)}, "invalid command: action of 129 bytes, at most 128"},
		{&agentv1.CommandRequest{Plugin: "p", Action: "a", Parameters: map[string]string{"": "v"}}, "invalid command: a parameter with an empty name"},
		{&agentv1.CommandRequest{Plugin: "p", Action: "a", Parameters: map[string]string{strings.Repeat("k", 1025): "v"}}, "invalid command: parameter name of 1025 bytes, at most 1024"},
		{&agentv1.CommandRequest{Plugin: "p", Action: "a", Parameters: map[string]string{"k": strings.Repeat("v", maxParamBytes)}}, "invalid command: parameters of 8388609 bytes, at most 8388608"},
	} {
		if got := s.invalid(c.req); got != c.want {
			t.Errorf("invalid(plugin %q action %q, %d params) = %q, want %q", c.req.GetPlugin(), c.req.GetAction(), len(c.req.GetParameters()), got, c.want)
		}
	}
	if got := s.invalid(&agentv1.CommandRequest{Plugin: "p", Action: "a", Parameters: params(1025)}); got != "invalid command: 1025 parameters, at most 1024" {
		t.Errorf("too many parameters: %q", got)
	}
}

func TestSlim(t *testing.T) {
	small := &agentv1.CommandResponse{CommandId: "c", Status: agentv1.CommandResponse_SUCCESS}
	if slim(small) != small {
		t.Error("a small answer was copied")
	}
	big := &agentv1.CommandResponse{CommandId: "c", Status: agentv1.CommandResponse_REJECTED, Output: strings.Repeat("x", 10000),
		Error: &commonv1.ErrorDetail{Code: "e", Message: strings.Repeat("m", 5000)}}
	s := slim(big)
	if s.GetOutput() != slimmed || len(s.GetError().GetMessage()) > 520 || s.GetStatus() != big.GetStatus() {
		t.Errorf("slimmed answer: output %q, message of %d bytes", s.GetOutput(), len(s.GetError().GetMessage()))
	}
	if len(big.GetOutput()) != 10000 {
		t.Error("slim changed the original")
	}
}

func TestRejectedError(t *testing.T) {
	err := &RejectedError{Reason: "bad token\x1b[2J"}
	if got := err.Error(); got != `the fleet server refused the registration: bad token\x1b[2J` {
		t.Errorf("%q", got)
	}
	// A server's 3 MiB reason is logged at every attempt: cut at 1 KiB, its length said.
	huge := &RejectedError{Reason: strings.Repeat("x", 3<<20)}
	if got := huge.Error(); len(got) > 1200 || !strings.HasSuffix(got, "... (3145728 bytes in all)") {
		t.Errorf("a 3 MiB reason: %d bytes, ending %q", len(got), got[max(0, len(got)-40):])
	}
	if !printableASCII("abc-123") || printableASCII("a\nb") || printableASCII("café") {
		t.Error("printableASCII")
	}
	if journal.MaxIDBytes != 256 {
		t.Error("the documented command id bound is 256 bytes")
	}
}

// Progress reports become RUNNING __progress__ messages: at most one per interval,
// none when the outbox has no room, none once the command's last rows are in.
func TestRelayProgress(t *testing.T) {
	s := &Session{out: spool.NewOutbox(1000), life: context.Background(), spool: mustSpool(t)}
	r := &relay{s: s, id: "c", every: time.Hour}
	for i := range 100 {
		r.progress(uint64(i), 100, "files\n|x")
	}
	r.every = 0
	if err := r.rows([]string{"row"}); err != nil {
		t.Fatal(err)
	}
	if err := r.end(""); err != nil {
		t.Fatal(err)
	}
	r.progress(100, 100, "files")
	got := drainRunning(t, s, "c")
	want := []string{`__progress__|done=0|total=100|unit=files\x0a|x`, "row"} // the last field keeps its "|" (package rows)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("messages %q, want %q", got, want)
	}

	// A full outbox drops the report rather than making the plugin wait.
	s.out = spool.NewOutbox(10)
	r = &relay{s: s, id: "d"}
	if err := r.rows([]string{strings.Repeat("r", 100)}); err != nil {
		t.Fatal(err)
	}
	if err := r.end(""); err != nil { // flushes the row: the outbox is over its limit
		t.Fatal(err)
	}
	r.ended = false
	r.progress(1, 2, "files")
	if n := s.out.Len(); n != 1 {
		t.Errorf("%d messages queued, want only the row", n)
	}
}

// mustSpool is a spool that keeps nothing on disk and confirms at once.
func mustSpool(t *testing.T) *spool.Spool {
	t.Helper()
	sp, err := spool.NewSpool("", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	sp.ConfirmDelay = 0
	return sp
}

// drainRunning takes every queued message, each of which must be a RUNNING message of
// command id, and returns their outputs in order.
func drainRunning(t *testing.T, s *Session, id string) []string {
	t.Helper()
	var got []string
	for s.out.Len() > 0 {
		m, _ := s.out.Peek(context.Background())
		s.out.Pop()
		if m.Resp.GetStatus() != agentv1.CommandResponse_RUNNING || m.Resp.GetCommandId() != id {
			t.Fatalf("message %v", m.Resp)
		}
		got = append(got, m.Resp.GetOutput())
	}
	return got
}
