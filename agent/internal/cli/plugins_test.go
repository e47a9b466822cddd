package cli

import (
	"strings"
	"testing"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/definition"
	"github.com/yuzugo/yuzu/sdk/host"
)

// The shipping rules of `plugins add`: an id another plugin or a workflow serves is
// refused naming both owners, a minAgentVersion newer than this agent naming both
// versions.
func TestShippingRules(t *testing.T) {
	m := host.Manifest{Name: "acme", Version: "1.0.0"}
	defs := []definition.Definition{
		{ID: "device.tags.get", Plugin: "acme"},
		{ID: "acme.disk.scan", Plugin: "acme", MinAgentVersion: "99.0.0"},
		{ID: "acme.disk.list", Plugin: "acme", MinAgentVersion: Version},
		{ID: "workflow.x", Plugin: "acme"},
	}
	others := map[string][]definition.Definition{
		"tags":         {{ID: "device.tags.get", Plugin: "tags"}},
		workflowsOwner: {{ID: "workflow.x"}},
	}
	got := strings.Join(shippingRules(m, defs, others), "\n")
	want := "definition device.tags.get of plugin acme: the id is already served by plugin tags\n" +
		"definition acme.disk.scan needs agent version 99.0.0 or later; this agent is " + Version + "\n" +
		"definition workflow.x of plugin acme: the id is already served by the agent's workflows"
	if got != want {
		t.Errorf("shippingRules:\n got %q\nwant %q", got, want)
	}
	if p := shippingRules(m, defs[2:3], others); len(p) != 0 {
		t.Errorf("a definition for this very agent version refused: %q", p)
	}
}

// TestMechanismAction: describe runs only the action a plugin declares as its
// mechanism probe (sdk.MechanismProbe), and only when it takes no required parameter;
// a `state` action with a `backend` row that does not declare it is not run.
func TestMechanismAction(t *testing.T) {
	backend := []sdk.RowKind{{Kind: "backend"}}
	for _, c := range []struct {
		name    string
		actions []sdk.Action
		want    string
	}{
		{"firewall", []sdk.Action{{Name: "rules", Rows: backend}, {Name: "state", Rows: backend, MechanismProbe: true}}, "state"},
		{"state not declared", []sdk.Action{{Name: "rules", Rows: backend}, {Name: "state", Rows: backend}}, ""},
		{"another name declared", []sdk.Action{{Name: "state", Rows: backend}, {Name: "probe", Rows: backend, MechanismProbe: true}}, "probe"},
		{"required parameter", []sdk.Action{{Name: "state", Rows: backend, MechanismProbe: true, Params: []sdk.Parameter{{Name: "zone", Required: true}}}}, ""},
		{"optional parameter", []sdk.Action{{Name: "state", Rows: backend, MechanismProbe: true, Params: []sdk.Parameter{{Name: "zone"}}}}, "state"},
	} {
		if got := mechanismAction(host.Manifest{Actions: c.actions}); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
