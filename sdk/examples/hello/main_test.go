package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/sdktest"
)

func TestGreetInProcess(t *testing.T) {
	h := sdktest.New(t, newPlugin(), sdk.Config{})
	cases := []struct {
		params map[string]string
		want   string
	}{
		{map[string]string{"name": "Ada"}, "greeting|Hello, Ada!\n[result_status] UNDECLARED / UNKNOWN\n"},
		{map[string]string{"name": "Ada", "shout": "true"}, "greeting|HELLO, Ada!\n[result_status] UNDECLARED / UNKNOWN\n"},
		{map[string]string{"name": "Ada", "shout": "false"}, "greeting|Hello, Ada!\n[result_status] UNDECLARED / UNKNOWN\n"},
		// Declared parameters are checked before greet runs.
		{map[string]string{"name": "Ada", "shout": "TRUE"}, "error|parameter shout: must be true or false (got \"TRUE\")\n[result_status] UNDECLARED / UNKNOWN\n[rc] 1\n"},
		{map[string]string{}, "error|missing required parameter: name\n[result_status] UNDECLARED / UNKNOWN\n[rc] 1\n"},
		{map[string]string{"name": ""}, "error|missing required parameter: name\n[result_status] UNDECLARED / UNKNOWN\n[rc] 1\n"},
		{map[string]string{"name": strings.Repeat("x", 128)}, "greeting|Hello, " + strings.Repeat("x", 128) + "!\n[result_status] UNDECLARED / UNKNOWN\n"},
		{map[string]string{"name": strings.Repeat("x", 129)}, "error|name exceeds 128 bytes\n[result_status] UNDECLARED / UNKNOWN\n[rc] 1\n"},
		// A parameter the action does not declare still reaches it, unchecked.
		{map[string]string{"name": "Ada", "colour": "red"}, "greeting|Hello, Ada!\n[result_status] UNDECLARED / UNKNOWN\n"},
	}
	for _, c := range cases {
		if got := h.Run("greet", c.params).String(); got != c.want {
			t.Errorf("greet %v:\n got %q\nwant %q", c.params, got, c.want)
		}
	}
	if got := h.Run("wave", nil).String(); got != "unknown action: wave\n[result_status] UNDECLARED / UNKNOWN\n[rc] 1\n" {
		t.Errorf("unknown action: got %q", got)
	}
}

// The definitions the plugin ships must agree with what it declares; this is the check
// `yuzu-agent plugins add` applies too.
func TestDefinitionsAgree(t *testing.T) {
	defs := sdktest.CheckDefinitions(t, newPlugin())
	if len(defs) != 1 || defs[0].ID != "example.hello.greet" {
		t.Errorf("definitions = %v, want example.hello.greet", defs)
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
	if m.Name != "hello" || m.SDKVersion != sdk.Version || len(m.Actions) != 1 || m.Actions[0].Name != "greet" {
		t.Fatalf("manifest: %+v", m)
	}
	a := m.Actions[0]
	if a.Linux.Level != sdk.SupportSupported || len(a.Params) != 2 || a.Params[0].Name != "name" || !a.Params[0].Required {
		t.Errorf("declarations did not travel: %+v", a)
	}
	if len(m.Definitions) != 1 || !strings.Contains(string(m.Definitions[0].Content), "example.hello.greet") {
		t.Errorf("definitions did not travel: %+v", m.Definitions)
	}
	if got := h.Run("greet", map[string]string{"name": "Grace"}).String(); got != "greeting|Hello, Grace!\n[result_status] UNDECLARED / UNKNOWN\n" {
		t.Errorf("got %q", got)
	}
}
