package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/definition"
	"github.com/yuzugo/yuzu/sdk/sdktest"
)

const (
	undeclared = "[result_status] UNDECLARED / UNKNOWN\n"
	failed     = undeclared + "[rc] 1\n"
)

func TestGreetInProcess(t *testing.T) {
	h := sdktest.New(t, newPlugin(), sdk.Config{})
	cases := []struct {
		params map[string]string
		want   string
	}{
		{map[string]string{"name": "Ada"}, "greeting|Hello, Ada!\n" + undeclared},
		{map[string]string{"name": "Ada", "style": "shout"}, "greeting|HELLO, Ada!\n" + undeclared},
		{map[string]string{"name": "Ada", "times": "2"}, "greeting|Hello, Ada!\ngreeting|Hello, Ada!\n" + undeclared},
		// Declared parameters are checked before greet runs.
		{map[string]string{"name": "Ada", "style": "loud"}, "error|parameter style: must be one of plain, shout (got \"loud\")\n" + failed},
		{map[string]string{"name": "Ada", "times": "0"}, "error|parameter times: 0 is below minimum 1\n" + failed},
		{map[string]string{"name": "Ada", "times": "2x"}, "error|parameter times: not a valid int32: \"2x\"\n" + failed},
		{map[string]string{}, "error|missing required parameter: name\n" + failed},
		{map[string]string{"name": strings.Repeat("x", 129)}, "error|name exceeds 128 bytes\n" + failed},
		// A parameter the action does not declare still reaches it, unchecked.
		{map[string]string{"name": "Ada", "colour": "red"}, "greeting|Hello, Ada!\n" + undeclared},
	}
	for _, c := range cases {
		if got := h.Run("greet", c.params).String(); got != c.want {
			t.Errorf("greet %v:\n got %q\nwant %q", c.params, got, c.want)
		}
	}
	if got := h.Run("wave", nil).String(); got != "unknown action: wave\n"+failed {
		t.Errorf("unknown action: got %q", got)
	}
}

func TestCountReportsProgress(t *testing.T) {
	h := sdktest.New(t, newPlugin(), sdk.Config{})
	o := h.Run("count", map[string]string{"n": "5"})
	if want := "number|1\nnumber|2\nnumber|3\nnumber|4\nnumber|5\n[result_status] OK / FULL\n"; o.String() != want {
		t.Errorf("count: got %q, want %q", o.String(), want)
	}
	// The first report and the one that reaches the total always arrive.
	first, last := o.Progress[0], o.Progress[len(o.Progress)-1]
	if first != (sdktest.Progress{Done: 1, Total: 5, Unit: "numbers"}) || last != (sdktest.Progress{Done: 5, Total: 5, Unit: "numbers"}) {
		t.Errorf("progress %+v", o.Progress)
	}
}

// The definitions the plugin serves (one overlaid, one derived) must agree with what it
// declares; this is the check `yuzu-agent plugins add` applies too.
func TestDefinitionsAgree(t *testing.T) {
	defs := sdktest.CheckDefinitions(t, newPlugin())
	if len(defs) != 2 {
		t.Fatalf("definitions = %v, want example.hello.greet and example.hello.count", defs)
	}
	greet, count := defs[0], defs[1]
	if greet.ID != "example.hello.greet" || greet.Type != definition.TypeQuestion || greet.Approval != definition.ApprovalAuto ||
		greet.DisplayName != "Greet Someone" || len(greet.Parameters) != 3 || greet.MinAgentVersion != "0.1.0" {
		t.Errorf("greet, derived and overlaid: %+v", greet)
	}
	if count.ID != "example.hello.count" || count.Type != definition.TypeAction || count.Approval != definition.ApprovalRoleGated ||
		len(count.Columns) != 1 || count.Columns[0].Type != sdk.TypeInt32 {
		t.Errorf("count, derived: %+v", count)
	}
	// What describe --definitions prints reads back to the same definitions.
	data, err := definition.Marshal(defs)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := definition.Parse("printed.yaml", data); err != nil || len(again) != 2 {
		t.Errorf("printed definitions do not parse back: %v\n%s", err, data)
	}
}

func TestGreetWithDeadline(t *testing.T) {
	h := sdktest.New(t, newPlugin(), sdk.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o, err := h.RunContext(ctx, "greet", map[string]string{"name": "Ada"})
	if err != nil || o.Result.Code != 0 || len(o.Rows) != 1 {
		t.Errorf("RunContext = %v, %v", o, err)
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	if _, err := h.RunContext(done, "greet", map[string]string{"name": "Ada"}); !errors.Is(err, context.Canceled) {
		t.Errorf("RunContext on a cancelled context: err = %v, want context.Canceled", err)
	}
}

func TestGreetAsChild(t *testing.T) {
	bin := sdktest.Build(t, ".")
	h := sdktest.Start(t, bin, sdk.Config{})
	m := h.Manifest()
	if m.Name != "hello" || m.SDKVersion != sdk.Version || m.Vendor != "example" || m.Protocol != 1 || len(m.Actions) != 2 || m.Actions[0].Name != "greet" {
		t.Fatalf("manifest: %+v", m)
	}
	a := m.Actions[0]
	if a.Linux.Level != sdk.SupportSupported || len(a.Params) != 3 || a.Params[0].Name != "name" || !a.Params[0].Required {
		t.Errorf("declarations did not travel: %+v", a)
	}
	if defs, err := m.ServedDefinitions(); err != nil || len(defs) != 2 {
		t.Errorf("served definitions over the wire: %v, %v", defs, err)
	}
	if got := h.Run("greet", map[string]string{"name": "Grace", "times": "3"}).String(); got != strings.Repeat("greeting|Hello, Grace!\n", 3)+undeclared {
		t.Errorf("got %q", got)
	}
	if o := h.Run("count", map[string]string{"n": "3"}); len(o.Rows) != 3 || len(o.Progress) == 0 || o.Progress[len(o.Progress)-1].Done != 3 {
		t.Errorf("count through a real child: %+v", o)
	}
}
