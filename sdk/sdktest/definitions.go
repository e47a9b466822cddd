package sdktest

import (
	"testing"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/definition"
	"github.com/yuzugo/yuzu/sdk/host"
)

// CheckDefinitions fails the test for every way the definitions p serves disagree with
// what p declares: each definition's plugin, action, parameters (names, types,
// required, every rule), result columns and platforms, both ways, and every action
// must have a definition. The definitions p serves are the ones it ships and, with
// p.Vendor set, the ones the SDK derives for the other actions, overlays included
// (definition.Served). It is the check `yuzu-agent plugins add` applies before it
// trusts a plugin, so a plugin whose own tests call it is never refused for this.
//
// It returns the definitions for further checks of the plugin's own.
func CheckDefinitions(t testing.TB, p *sdk.Plugin) []definition.Definition {
	t.Helper()
	m := host.ManifestOf(p)
	if len(m.Definitions) == 0 && m.Vendor == "" {
		t.Fatalf("sdktest: plugin %s ships no definitions (sdk.Plugin.Definitions) and derives none (sdk.Plugin.Vendor)", p.Name)
	}
	defs, err := m.ServedDefinitions()
	if err != nil {
		t.Fatalf("sdktest: plugin %s: its definitions do not parse:\n%v", p.Name, err)
	}
	for _, d := range definition.CheckAgreement(p.Name, p.Actions(), defs) {
		t.Errorf("sdktest: plugin %s: %v", p.Name, d)
	}
	return defs
}

// CheckWorkflow fails the test for every way a workflow definition (a definition kept
// apart from the plugin that runs one of its actions) disagrees with that action's
// declaration; see definition.CheckWorkflow.
func CheckWorkflow(t testing.TB, d definition.Definition, p *sdk.Plugin) {
	t.Helper()
	if d.Plugin != p.Name {
		t.Fatalf("sdktest: workflow %s runs plugin %q, not %q", d.ID, d.Plugin, p.Name)
	}
	for _, problem := range definition.CheckWorkflow(d, p.Actions()) {
		t.Errorf("sdktest: %v", problem)
	}
}
