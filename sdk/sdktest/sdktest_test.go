package sdktest

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
)

func TestOutcomeString(t *testing.T) {
	cases := []struct {
		o    Outcome
		want string
	}{
		{Outcome{}, "[result_status] UNDECLARED / UNKNOWN\n"},
		{Outcome{Rows: []string{"a|b", "c"}}, "a|b\nc\n[result_status] UNDECLARED / UNKNOWN\n"},
		{Outcome{Rows: []string{"error|x"}, Result: sdk.Result{Code: 1}}, "error|x\n[result_status] UNDECLARED / UNKNOWN\n[rc] 1\n"},
		{Outcome{Result: sdk.Partial("tags:persist_failed")}, "[result_status] CONSTRAINED / PARTIAL / tags:persist_failed\n"},
		{Outcome{Result: sdk.Result{Code: 2, Status: sdk.StatusOK, Completeness: sdk.CompletenessFull}}, "[result_status] OK / FULL\n[rc] 2\n"},
	}
	for _, c := range cases {
		if got := c.o.String(); got != c.want {
			t.Errorf("%+v: got %q, want %q", c.o, got, c.want)
		}
	}
}

// fatalTB records a Fatalf and ends the calling goroutine, as testing.T does, so a
// harness failure can be checked without failing this test.
type fatalTB struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.msg = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

// fatalOf runs fn with a fatalTB in its own goroutine and returns the Fatalf message,
// or "" when fn returned normally.
func fatalOf(t *testing.T, fn func(tb testing.TB)) string {
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.msg
}

func TestHarnessFailuresAreFatal(t *testing.T) {
	cases := []struct {
		name string
		fn   func(tb testing.TB)
		want string
	}{
		{"invalid plugin", func(tb testing.TB) { New(tb, sdk.New("bad name", "1", ""), sdk.Config{}) }, "sdktest: plugin name"},
		{"build of a missing package", func(tb testing.TB) { Build(tb, "./no/such/package") }, "sdktest: go build ./no/such/package"},
		{"start of a non-plugin", func(tb testing.TB) { Start(tb, "/bin/true", sdk.Config{}) }, "sdktest: start /bin/true"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if reason := NoGo(); reason != "" && strings.HasPrefix(c.name, "build") {
				t.Skip(reason)
			}
			if got := fatalOf(t, c.fn); !strings.Contains(got, c.want) {
				t.Errorf("Fatalf message %q, want one containing %q", got, c.want)
			}
		})
	}
}

func TestInProcessHarness(t *testing.T) {
	p := sdk.New("harness", "1", "")
	p.Handle("echo", func(_ context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
		out.Row("v", req.Params.Get("v", "absent"), req.Config.AgentID)
		return sdk.Done(), nil
	})
	h := New(t, p, sdk.Config{AgentID: "a1"})
	if h.Client != nil {
		t.Error("in-process harness has a go-plugin client")
	}
	if got := h.Run("echo", map[string]string{"v": "x"}).String(); got != "v|x|a1\n[result_status] UNDECLARED / UNKNOWN\n" {
		t.Errorf("got %q", got)
	}
	if got := h.Run("echo", nil).Rows; len(got) != 1 || got[0] != "v|absent|a1" {
		t.Errorf("nil params: %q", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Execute(ctx, host.Command{Action: "echo"}); err == nil {
		t.Error("Execute with a cancelled context returned no error")
	}
	if m := h.Manifest(); m.Name != "harness" || len(m.Actions) != 1 {
		t.Errorf("manifest %+v", m)
	}
}

// Progress reaches the harness: the first report and the one reaching the total are
// never dropped, whatever the interval between them.
func TestProgressReports(t *testing.T) {
	p := sdk.New("progress", "1", "")
	p.Handle("count", func(_ context.Context, _ *sdk.Request, out *sdk.Output) (sdk.Result, error) {
		for i := int64(1); i <= 3; i++ {
			out.Progress(i, 3, "files\n")
		}
		out.Row("counted", "3")
		return sdk.Done(), nil
	})
	o := New(t, p, sdk.Config{}).Run("count", nil)
	if len(o.Progress) < 2 || o.Progress[0] != (Progress{1, 3, `files\x0a`}) || o.Progress[len(o.Progress)-1] != (Progress{3, 3, `files\x0a`}) {
		t.Errorf("progress %+v, want 1/3 first and 3/3 last, the unit escaped", o.Progress)
	}
	if len(o.Rows) != 1 || o.Rows[0] != "counted|3" {
		t.Errorf("rows %q: progress must never be a row", o.Rows)
	}
}

// errorTB records Errorf calls without failing the test that uses it.
type errorTB struct {
	testing.TB
	errs []string
}

func (e *errorTB) Helper() {}
func (e *errorTB) Errorf(format string, args ...any) {
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
}

// The harness fails a test whose plugin writes rows its declaration does not allow,
// one error per row, and AllowUndeclaredRows turns that off.
func TestHarnessChecksRows(t *testing.T) {
	p := sdk.New("rowcheck", "1.0.0", "")
	p.Handle("list", func(_ context.Context, _ *sdk.Request, out *sdk.Output) (sdk.Result, error) {
		out.Row("proc", "1", "root", "init") // agrees
		out.Row("proc", "2")                 // one field of three
		out.Row("thread", "3")               // a kind not declared
		out.Row("proc", "notanint", "root", "x")
		return sdk.Done(), nil
	}, sdk.Row("proc", "pid:int32", "user", "command"))
	rec := &errorTB{TB: t}
	h := New(rec, p, sdk.Config{})
	h.Run("list", nil)
	if len(rec.errs) != 3 {
		t.Fatalf("%d errors, want 3: %q", len(rec.errs), rec.errs)
	}
	for i, want := range []string{"row proc has 1 of its 3 declared fields", `row kind "thread" is not declared`, `field pid is "notanint", not int32`} {
		if !strings.Contains(rec.errs[i], want) {
			t.Errorf("error %d: %q, want %q", i, rec.errs[i], want)
		}
	}
	rec.errs = nil
	h.AllowUndeclaredRows()
	h.Run("list", nil)
	if len(rec.errs) != 0 {
		t.Errorf("AllowUndeclaredRows: %q", rec.errs)
	}
}
