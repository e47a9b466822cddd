package sdk_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
	"github.com/yuzugo/yuzu/sdk/sdktest"
)

// testPlugin has one action per server behaviour under test.
func testPlugin(t *testing.T) (*sdk.Plugin, chan error) {
	cancelled := make(chan error, 1)
	p := sdk.New("servertest", "1.2.3", "server tests")
	p.Capabilities = []string{"cap_a"}
	p.Handle("ok", func(_ context.Context, req *sdk.Request, out *sdk.Output) sdk.Result {
		out.Row("agent", req.Config.AgentID, req.Config.DataDir)
		out.Row("command", req.CommandID, req.Action)
		if req.Log == nil {
			return out.Fail("no logger")
		}
		return sdk.OK()
	}, sdk.Describe("answers"), sdk.OnLinux(sdk.OSLeg{Support: sdk.SupportSupported, Rung: 1, Mechanism: "m"}),
		sdk.OnWindows(sdk.OSLeg{Support: sdk.SupportPlanned, Fallback: "later"}))
	p.Handle("params", func(_ context.Context, req *sdk.Request, out *sdk.Output) sdk.Result {
		for _, k := range []string{"empty", "absent", "set"} {
			v, ok := req.Params.Lookup(k)
			out.Row("param", k, strconv.FormatBool(ok), v)
		}
		return sdk.OK()
	})
	p.Handle("explode", func(_ context.Context, _ *sdk.Request, out *sdk.Output) sdk.Result {
		out.Row("before", "panic")
		panic("boom")
	})
	p.Handle("explode_error", func(context.Context, *sdk.Request, *sdk.Output) sdk.Result {
		panic(errors.New("typed failure"))
	})
	p.Handle("status", func(_ context.Context, req *sdk.Request, _ *sdk.Output) sdk.Result {
		s, _ := req.Params.Int("status", 0)
		c, _ := req.Params.Int("completeness", 0)
		code, _ := req.Params.Int("code", 0)
		return sdk.Result{Code: code, Status: sdk.Status(s), Completeness: sdk.Completeness(c), Provenance: req.Params.Get("prov", "")}
	})
	p.Handle("constrained", func(context.Context, *sdk.Request, *sdk.Output) sdk.Result {
		return sdk.Constrained("servertest:limited")
	})
	p.Handle("deadline", func(ctx context.Context, req *sdk.Request, out *sdk.Output) sdk.Result {
		d, ok := ctx.Deadline()
		out.Row("ctx", strconv.FormatBool(ok), d.UTC().Format(time.RFC3339Nano))
		out.Row("req", req.Deadline.UTC().Format(time.RFC3339Nano))
		<-ctx.Done()
		out.Row("done", ctx.Err().Error())
		return sdk.OK()
	})
	p.Handle("wait", func(ctx context.Context, _ *sdk.Request, _ *sdk.Output) sdk.Result {
		<-ctx.Done()
		cancelled <- ctx.Err()
		return sdk.Failed()
	})
	p.Handle("many", func(_ context.Context, req *sdk.Request, out *sdk.Output) sdk.Result {
		n, _ := req.Params.Int("n", 0)
		for i := range n {
			out.Row("n", strconv.Itoa(i))
		}
		return sdk.OK()
	})
	return p, cancelled
}

const undeclared = "[result_status] UNDECLARED / UNKNOWN\n"

func TestServerCaptureFormat(t *testing.T) {
	p, _ := testPlugin(t)
	h := sdktest.New(t, p, sdk.Config{AgentID: "agent-1", DataDir: "/var/lib/yuzu"})
	cases := []struct {
		action string
		params map[string]string
		want   string
	}{
		{"ok", nil, "agent|agent-1|/var/lib/yuzu\ncommand||ok\n" + undeclared},
		{"params", map[string]string{"empty": "", "set": "v|w"}, "param|empty|true|\nparam|absent|false|\nparam|set|true|v|w\n" + undeclared},
		{"nope", nil, "unknown action: nope\n" + undeclared + "[rc] 1\n"},
		{"a|b", nil, "unknown action: a|b\n" + undeclared + "[rc] 1\n"},
		{"", nil, "unknown action: \n" + undeclared + "[rc] 1\n"},
		{"explode", nil, "before|panic\nerror|plugin panicked in explode: boom\n" + undeclared + "[rc] 1\n"},
		{"explode_error", nil, "error|plugin panicked in explode_error: typed failure\n" + undeclared + "[rc] 1\n"},
		{"constrained", nil, "[result_status] CONSTRAINED / PARTIAL / servertest:limited\n"},
		{"status", map[string]string{"status": "1", "completeness": "1"}, "[result_status] OK / FULL\n"},
		{"status", map[string]string{"status": "3", "completeness": "2", "code": "2", "prov": "p"}, "[result_status] PERMISSION_DENIED / PARTIAL / p\n[rc] 2\n"},
		{"status", map[string]string{"status": "99", "completeness": "7"}, undeclared},
		{"status", map[string]string{"status": "5", "completeness": "3"}, undeclared},
		{"status", map[string]string{"status": "-1", "completeness": "-1"}, undeclared},
		// The plugin keeps serving after a panic.
		{"ok", nil, "agent|agent-1|/var/lib/yuzu\ncommand||ok\n" + undeclared},
	}
	for _, c := range cases {
		if got := h.Run(c.action, c.params).String(); got != c.want {
			t.Errorf("%s %v:\n got %q\nwant %q", c.action, c.params, got, c.want)
		}
	}
}

func TestServerCommandID(t *testing.T) {
	p, _ := testPlugin(t)
	h := sdktest.New(t, p, sdk.Config{})
	o, err := h.Execute(context.Background(), host.Command{ID: "cmd-42", Action: "ok"})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Rows) != 2 || o.Rows[1] != "command|cmd-42|ok" {
		t.Errorf("rows %q", o.Rows)
	}
}

func TestServerDeadlineReachesHandler(t *testing.T) {
	p, _ := testPlugin(t)
	h := sdktest.New(t, p, sdk.Config{})
	deadline := time.Now().Add(300 * time.Millisecond).Round(time.Microsecond)
	start := time.Now()
	o, err := h.Execute(context.Background(), host.Command{Action: "deadline", Deadline: deadline})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the handler waited %v for a 300ms deadline", took)
	}
	want := []string{
		"ctx|true|" + deadline.UTC().Format(time.RFC3339Nano),
		"req|" + deadline.UTC().Format(time.RFC3339Nano),
		"done|" + context.DeadlineExceeded.Error(),
	}
	if strings.Join(o.Rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows %q, want %q", o.Rows, want)
	}
}

func TestServerClientCancelReachesHandler(t *testing.T) {
	p, cancelled := testPlugin(t)
	h := sdktest.New(t, p, sdk.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err := h.Execute(ctx, host.Command{Action: "wait"}); err == nil {
		t.Error("a cancelled Execute returned no error")
	}
	select {
	case err := <-cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("handler saw %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context was not cancelled")
	}
}

func TestServerStreamsManyRowsInOrder(t *testing.T) {
	p, _ := testPlugin(t)
	h := sdktest.New(t, p, sdk.Config{})
	const n = 100_000
	o := h.Run("many", map[string]string{"n": strconv.Itoa(n)})
	if o.Result != sdk.OK() {
		t.Errorf("result %+v", o.Result)
	}
	if len(o.Rows) != n {
		t.Fatalf("%d rows arrived, want %d", len(o.Rows), n)
	}
	for i, r := range o.Rows {
		if r != "n|"+strconv.Itoa(i) {
			t.Fatalf("row %d is %q", i, r)
		}
	}
}

func TestServerManifest(t *testing.T) {
	p, _ := testPlugin(t)
	m := sdktest.New(t, p, sdk.Config{}).Manifest()
	if m.Name != "servertest" || m.Version != "1.2.3" || m.Description != "server tests" || m.SDKVersion != sdk.Version {
		t.Errorf("identity %+v", m)
	}
	if len(m.Capabilities) != 1 || m.Capabilities[0] != "cap_a" {
		t.Errorf("capabilities %q", m.Capabilities)
	}
	var names []string
	for _, a := range m.Actions {
		names = append(names, a.Name)
	}
	if got := strings.Join(names, ","); got != "ok,params,explode,explode_error,status,constrained,deadline,wait,many" {
		t.Errorf("actions in order: %s", got)
	}
	a, ok := m.Action("ok")
	if !ok || a.Description != "answers" {
		t.Fatalf("action ok: %+v", a)
	}
	if a.Linux != (sdk.OSLeg{Support: sdk.SupportSupported, Rung: 1, Mechanism: "m"}) ||
		a.Windows != (sdk.OSLeg{Support: sdk.SupportPlanned, Fallback: "later"}) ||
		a.Darwin != (sdk.OSLeg{}) {
		t.Errorf("legs %+v", a)
	}
}

func TestConfigureHookSeesConfig(t *testing.T) {
	p, _ := testPlugin(t)
	var got sdk.Config
	p.OnConfigure(func(_ context.Context, cfg sdk.Config) error { got = cfg; return nil })
	want := sdk.Config{AgentID: "id", AgentVersion: "9.9", DataDir: "/d", LogLevel: "debug"}
	sdktest.New(t, p, want)
	if got != want {
		t.Errorf("OnConfigure saw %+v, want %+v", got, want)
	}
}
