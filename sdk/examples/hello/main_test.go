package main

import (
	"strings"
	"testing"

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
		{map[string]string{"name": "Ada", "shout": "TRUE"}, "greeting|Hello, Ada!\n[result_status] UNDECLARED / UNKNOWN\n"},
		{map[string]string{}, "error|missing required parameter: name\n[result_status] UNDECLARED / UNKNOWN\n[rc] 1\n"},
		{map[string]string{"name": ""}, "error|missing required parameter: name\n[result_status] UNDECLARED / UNKNOWN\n[rc] 1\n"},
		{map[string]string{"name": strings.Repeat("x", 129)}, "error|name exceeds 128 characters\n[result_status] UNDECLARED / UNKNOWN\n[rc] 1\n"},
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

func TestGreetAsChild(t *testing.T) {
	bin := sdktest.Build(t, ".")
	h := sdktest.Start(t, bin, sdk.Config{})
	m := h.Manifest()
	if m.Name != "hello" || m.SDKVersion != sdk.Version || len(m.Actions) != 1 || m.Actions[0].Name != "greet" {
		t.Fatalf("manifest: %+v", m)
	}
	if m.Actions[0].Linux.Support != sdk.SupportSupported {
		t.Errorf("linux support = %v", m.Actions[0].Linux.Support)
	}
	if got := h.Run("greet", map[string]string{"name": "Grace"}).String(); got != "greeting|Hello, Grace!\n[result_status] UNDECLARED / UNKNOWN\n" {
		t.Errorf("got %q", got)
	}
}
