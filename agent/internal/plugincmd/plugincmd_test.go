package plugincmd

import (
	"strings"
	"testing"

	"github.com/yuzugo/yuzu/sdk/definition"
	"github.com/yuzugo/yuzu/sdk/host"
)

const agentVersion = "0.4.0"

// The shipping rules of `plugins add`: an id another plugin or a workflow serves is
// refused naming both owners, a minAgentVersion newer than this agent naming both
// versions.
func TestShippingRules(t *testing.T) {
	m := host.Manifest{Name: "acme", Version: "1.0.0"}
	defs := []definition.Definition{
		{ID: "device.tags.get", Plugin: "acme"},
		{ID: "acme.disk.scan", Plugin: "acme", MinAgentVersion: "99.0.0"},
		{ID: "acme.disk.list", Plugin: "acme", MinAgentVersion: agentVersion},
		{ID: "workflow.x", Plugin: "acme"},
	}
	others := map[string][]definition.Definition{
		"tags":         {{ID: "device.tags.get", Plugin: "tags"}},
		workflowsOwner: {{ID: "workflow.x"}},
	}
	got := strings.Join(shippingRules(agentVersion, m, defs, others), "\n")
	want := "definition device.tags.get of plugin acme: the id is already served by plugin tags\n" +
		"definition acme.disk.scan needs agent version 99.0.0 or later; this agent is " + agentVersion + "\n" +
		"definition workflow.x of plugin acme: the id is already served by the agent's workflows"
	if got != want {
		t.Errorf("shippingRules:\n got %q\nwant %q", got, want)
	}
	if p := shippingRules(agentVersion, m, defs[2:3], others); len(p) != 0 {
		t.Errorf("a definition for this very agent version refused: %q", p)
	}
}
