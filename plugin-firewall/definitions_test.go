package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/definition"
	"github.com/yuzugo/yuzu/sdk/sdktest"
)

func stringColumns(names ...string) []sdk.Column {
	cols := make([]sdk.Column, len(names))
	for i, n := range names {
		cols[i] = sdk.Column{Name: n, Type: sdk.TypeString}
	}
	return cols
}

// TestShippedDefinitions checks the definitions the plugin ships against its
// declarations (both ways, the check `yuzu-agent plugins add` makes), then against
// the upstream metadata.
func TestShippedDefinitions(t *testing.T) {
	defs := sdktest.CheckDefinitions(t, newPlugin())
	want := []struct {
		id, action, version string
		ttl                 int
		columns             []sdk.Column
	}{
		{"security.firewall.state", "state", "1.2.0", 120, stringColumns("profile_or_backend", "state")},
		{"security.firewall.rules", "rules", "1.0.0", 300,
			stringColumns("rule_name", "enabled", "direction", "action", "profiles")},
	}
	if len(defs) != len(want) {
		t.Fatalf("%d definitions, want %d", len(defs), len(want))
	}
	for i, w := range want {
		d := defs[i]
		t.Run(w.id, func(t *testing.T) {
			checks := []struct {
				field     string
				got, want any
			}{
				{"id", d.ID, w.id},
				{"version", d.Version, w.version},
				{"type", d.Type, definition.TypeQuestion},
				{"plugin", d.Plugin, "firewall"},
				{"action", d.Action, w.action},
				{"ttlSeconds", d.TTLSeconds, w.ttl},
				{"approval", d.Approval, definition.ApprovalAuto},
				{"concurrency", d.Concurrency, "per-device"},
				{"phase", d.Phase, "active"},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s = %v, want %v", c.field, c.got, c.want)
				}
			}
			if roles := []string{"endpoint-admin", "endpoint-operator", "security-admin"}; !slices.Equal(d.ExecuteRoles, roles) {
				t.Errorf("executeRoles %v, want %v", d.ExecuteRoles, roles)
			}
			if platforms := []string{"windows", "linux", "darwin"}; !slices.Equal(d.Platforms, platforms) {
				t.Errorf("platforms %v, want %v", d.Platforms, platforms)
			}
			if !slices.Equal(d.Columns, w.columns) {
				t.Errorf("columns %v, want %v", d.Columns, w.columns)
			}
			if len(d.Parameters) != 0 {
				t.Errorf("parameters %v, want none", d.Parameters)
			}
			if !slices.Equal(d.RequiredPlugins, []string{"firewall"}) {
				t.Errorf("requiredPlugins %v", d.RequiredPlugins)
			}
			if d.DisplayName == "" || d.ReadablePayload == "" {
				t.Errorf("displayName %q and readablePayload %q must both be set", d.DisplayName, d.ReadablePayload)
			}
			// Both descriptions say what the answer cannot tell, and that unknown
			// is not off.
			for _, phrase := range []string{"cannot tell you", "unknown"} {
				if !strings.Contains(d.Description, phrase) {
					t.Errorf("description lacks %q: %q", phrase, d.Description)
				}
			}
		})
	}
}
