package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
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
	p.Handle("ok", func(_ context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
		out.Row("agent", req.Config.AgentID, req.Config.DataDir)
		out.Row("command", req.CommandID, req.Action)
		if req.Log == nil {
			return out.Fail("no logger"), nil
		}
		return sdk.Done(), nil
	}, sdk.Describe("answers"), sdk.OnLinux(sdk.OSSupport{Level: sdk.SupportSupported, Rung: 1, Mechanism: "m"}),
		sdk.OnWindows(sdk.OSSupport{Level: sdk.SupportPlanned, Fallback: "later"}))
	p.Handle("params", func(_ context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
		for _, k := range []string{"empty", "absent", "set"} {
			v, ok := req.Params.Lookup(k)
			out.Row("param", k, strconv.FormatBool(ok), v)
		}
		return sdk.Done(), nil
	})
	p.Handle("explode", func(_ context.Context, _ *sdk.Request, out *sdk.Output) (sdk.Result, error) {
		out.Row("before", "panic")
		panic("boom")
	})
	p.Handle("explode_error", func(context.Context, *sdk.Request, *sdk.Output) (sdk.Result, error) {
		panic(errors.New("typed failure"))
	})
	p.Handle("status", func(_ context.Context, req *sdk.Request, _ *sdk.Output) (sdk.Result, error) {
		s, _ := req.Params.Int("status", 0)
		c, _ := req.Params.Int("completeness", 0)
		code, _ := req.Params.Int("code", 0)
		return sdk.Result{Code: code, Status: sdk.Status(s), Completeness: sdk.Completeness(c), Provenance: req.Params.Get("prov", "")}, nil
	})
	p.Handle("constrained", func(context.Context, *sdk.Request, *sdk.Output) (sdk.Result, error) {
		return sdk.Partial("servertest:limited"), nil
	})
	p.Handle("deadline", func(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
		d, ok := ctx.Deadline()
		out.Row("ctx", strconv.FormatBool(ok), d.UTC().Format(time.RFC3339Nano))
		out.Row("req", req.Deadline.UTC().Format(time.RFC3339Nano))
		<-ctx.Done()
		out.Row("done", ctx.Err().Error())
		return sdk.Done(), nil
	})
	p.Handle("wait", func(ctx context.Context, _ *sdk.Request, _ *sdk.Output) (sdk.Result, error) {
		<-ctx.Done()
		cancelled <- ctx.Err()
		return sdk.Result{Code: 1}, nil
	})
	p.Handle("many", func(_ context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
		n, _ := req.Params.Int("n", 0)
		for i := range n {
			out.Row("n", strconv.Itoa(i))
		}
		return sdk.Done(), nil
	})
	// declared: parameters checked by the SDK; the handler counts its runs so a test
	// can prove a refused command never reached it.
	p.Handle("declared", func(_ context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
		declaredRuns.Add(1)
		out.Row("limit", req.Params.Get("limit", "10"))
		return sdk.Complete(), nil
	},
		sdk.Param("path", sdk.TypeString, "a path", sdk.Required(), sdk.MaxLength(8),
			sdk.Message(sdk.RuleRequired, "missing required parameters: path, mode")),
		sdk.Param("mode", sdk.TypeString, "a mode", sdk.Required(), sdk.Enum("fast", "slow"),
			sdk.Message(sdk.RuleRequired, "missing required parameters: path, mode"),
			sdk.Message(sdk.RuleEnum, "unsupported mode: {value}")),
		sdk.Param("limit", sdk.TypeInt32, "a limit", sdk.Default("10"), sdk.Minimum(1), sdk.Maximum(100), sdk.Clamped()),
		sdk.Param("depth", sdk.TypeInt64, "a depth", sdk.Minimum(0), sdk.Maximum(5)),
		sdk.Param("key", sdk.TypeString, "a key", sdk.Pattern(`[a-z]+`)),
		sdk.Row("limit", "value:int32"),
		sdk.Row("total", "count:int64"),
	)
	p.Handle("fails", func(context.Context, *sdk.Request, *sdk.Output) (sdk.Result, error) {
		return sdk.Complete(), errors.New("went wrong\nbadly")
	})
	return p, cancelled
}

var declaredRuns atomic.Int64

func TestServerChecksDeclaredParameters(t *testing.T) {
	p, _ := testPlugin(t)
	h := sdktest.New(t, p, sdk.Config{})
	ok := "limit|%s\n[result_status] OK / FULL\n"
	fail := "error|%s\n[result_status] UNDECLARED / UNKNOWN\n[rc] 1\n"
	cases := []struct {
		params map[string]string
		want   string
	}{
		{map[string]string{"path": "/a", "mode": "fast"}, fmt.Sprintf(ok, "10")},
		{map[string]string{"path": "/a", "mode": "slow", "limit": "500"}, fmt.Sprintf(ok, "500")}, // clamped: the action's job
		{map[string]string{"path": "/a", "mode": "slow", "limit": "-3"}, fmt.Sprintf(ok, "-3")},
		{map[string]string{"path": "/a", "mode": "fast", "undeclared": "x"}, fmt.Sprintf(ok, "10")},
		{map[string]string{"mode": "fast"}, fmt.Sprintf(fail, "missing required parameters: path, mode")},
		{map[string]string{"path": "", "mode": "fast"}, fmt.Sprintf(fail, "missing required parameters: path, mode")},
		{map[string]string{"path": "/a"}, fmt.Sprintf(fail, "missing required parameters: path, mode")},
		{map[string]string{"path": "/123456789", "mode": "fast"}, fmt.Sprintf(fail, "parameter path: exceeds maxLength 8 (10 bytes)")},
		{map[string]string{"path": "/a", "mode": "FAST"}, fmt.Sprintf(fail, "unsupported mode: FAST")},
		{map[string]string{"path": "/a", "mode": "fast", "limit": "12abc"}, fmt.Sprintf(fail, `parameter limit: not a valid int32: "12abc"`)},
		{map[string]string{"path": "/a", "mode": "fast", "limit": ""}, fmt.Sprintf(fail, `parameter limit: not a valid int32: ""`)},
		{map[string]string{"path": "/a", "mode": "fast", "limit": "99999999999"}, fmt.Sprintf(fail, `parameter limit: "99999999999" is out of range for int32`)},
		{map[string]string{"path": "/a", "mode": "fast", "depth": "6"}, fmt.Sprintf(fail, "parameter depth: 6 is above maximum 5")},
		{map[string]string{"path": "/a", "mode": "fast", "depth": "-1"}, fmt.Sprintf(fail, "parameter depth: -1 is below minimum 0")},
		{map[string]string{"path": "/a", "mode": "fast", "key": "abc1"}, fmt.Sprintf(fail, "parameter key: does not match pattern [a-z]+")},
	}
	for _, c := range cases {
		before := declaredRuns.Load()
		got := h.Run("declared", c.params).String()
		if got != c.want {
			t.Errorf("declared %v:\n got %q\nwant %q", c.params, got, c.want)
		}
		ran := declaredRuns.Load() != before
		if refused := strings.HasPrefix(c.want, "error|"); ran == refused {
			t.Errorf("declared %v: handler ran = %v, want %v", c.params, ran, !refused)
		}
	}
}

func TestHandlerErrorBecomesErrorRow(t *testing.T) {
	p, _ := testPlugin(t)
	got := sdktest.New(t, p, sdk.Config{}).Run("fails", nil).String()
	if want := "error|went wrong badly\n[result_status] UNDECLARED / UNKNOWN\n[rc] 1\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
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
	if o.Result != sdk.Done() {
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
	var names []string
	for _, a := range m.Actions {
		names = append(names, a.Name)
	}
	if got := strings.Join(names, ","); got != "ok,params,explode,explode_error,status,constrained,deadline,wait,many,declared,fails" {
		t.Errorf("actions in order: %s", got)
	}
	a, ok := m.Action("ok")
	if !ok || a.Description != "answers" {
		t.Fatalf("action ok: %+v", a)
	}
	if a.Linux != (sdk.OSSupport{Level: sdk.SupportSupported, Rung: 1, Mechanism: "m"}) ||
		a.Windows != (sdk.OSSupport{Level: sdk.SupportPlanned, Fallback: "later"}) ||
		a.Darwin != (sdk.OSSupport{}) {
		t.Errorf("legs %+v", a)
	}
	// Declarations travel over the wire unchanged: what the agent learns from
	// Describe is what the plugin declared, messages included: the agent words a
	// refusal on the definition path with them.
	local := host.ManifestOf(p)
	wire, _ := json.Marshal(m.Actions)
	declared, _ := json.Marshal(local.Actions)
	if string(wire) != string(declared) {
		t.Errorf("actions after Describe:\n%s\ndeclared:\n%s", wire, declared)
	}
	d, _ := m.Action("declared")
	if len(d.Params) != 5 || d.Params[2].Name != "limit" || !d.Params[2].Clamped || *d.Params[2].Maximum != 100 ||
		len(d.Columns) != 2 || d.Columns[1] != (sdk.Column{Name: "count", Type: sdk.TypeInt64}) {
		t.Errorf("declared action after Describe: %+v", d)
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

// An action that takes only what it declares refuses any other parameter before its
// handler runs; without the option the parameter reaches the handler, as upstream.
func TestOnlyDeclaredParams(t *testing.T) {
	p := sdk.New("strict", "2.0.0", "strict parameters")
	ran := 0
	handler := func(_ context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
		ran++
		out.Row("user", req.Params.Get("user", "-"))
		return sdk.Done(), nil
	}
	p.Handle("list", handler, sdk.Param("user", sdk.TypeString, "whose"), sdk.OnlyDeclaredParams())
	p.Handle("loose", handler, sdk.Param("user", sdk.TypeString, "whose"))
	h := sdktest.New(t, p, sdk.Config{})

	o := h.Run("list", map[string]string{"user": "nobody", "zz": "1", "filter": "x"})
	if got := o.String(); got != "error|parameter filter: not declared by action list\n[result_status] UNDECLARED / UNKNOWN\n[rc] 1\n" {
		t.Errorf("undeclared parameter:\n%s", got)
	}
	if ran != 0 {
		t.Errorf("the handler ran %d times for a refused command", ran)
	}
	if o := h.Run("list", map[string]string{"user": "nobody"}); o.Result.Code != 0 || o.Rows[0] != "user|nobody" {
		t.Errorf("declared parameter: %v", o)
	}
	if o := h.Run("loose", map[string]string{"user": "nobody", "filter": "x"}); o.Result.Code != 0 {
		t.Errorf("an action without the option refused an undeclared parameter: %v", o)
	}
	acts := h.Manifest().Actions
	if !acts[0].OnlyDeclaredParams || acts[1].OnlyDeclaredParams {
		t.Errorf("manifest: list=%v loose=%v", acts[0].OnlyDeclaredParams, acts[1].OnlyDeclaredParams)
	}

	// The mechanism probe travels in the manifest, on the action that declares it.
	r := sdk.New("probe", "1.0.0", "probe")
	r.Handle("state", handler, sdk.Row("backend", "backend"))
	r.Handle("which", handler, sdk.Row("backend", "backend"), sdk.MechanismProbe())
	if acts := sdktest.New(t, r, sdk.Config{}).Manifest().Actions; acts[0].MechanismProbe || !acts[1].MechanismProbe {
		t.Errorf("manifest: state=%v which=%v, want only which", acts[0].MechanismProbe, acts[1].MechanismProbe)
	}

	// The plugin's method covers actions registered before and after it.
	q := sdk.New("strict", "2.0.0", "strict parameters")
	q.Handle("before", handler)
	q.OnlyDeclaredParams()
	q.Handle("after", handler)
	for _, a := range q.Actions() {
		if !a.OnlyDeclaredParams {
			t.Errorf("Plugin.OnlyDeclaredParams left %s loose", a.Name)
		}
	}
}
