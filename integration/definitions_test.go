//go:build linux

package integration

import (
	"context"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/definitions"
	"github.com/yuzugo/yuzu/sdk/definition"
	"github.com/yuzugo/yuzu/sdk/host"
)

// TestDefinitionsAgreeWithPlugins runs every shipped plugin and checks, over the wire,
// what the agent will rely on: the definitions each plugin serves (its documents laid
// over the ones derived from its declarations, host.Manifest.ServedDefinitions) agree
// with its declarations both ways (and cover every action), no id is defined twice across
// plugins and workflows, every workflow agrees with the action it runs, and with a
// vendor prefix each definition has its action's derived id (no document beside an
// overlay runs a derived action under another id).
func TestDefinitionsAgreeWithPlugins(t *testing.T) {
	t.Parallel()
	if len(shipped) == 0 {
		t.Fatal("no plugin-* module found to build")
	}
	var bins []string
	for _, p := range shipped {
		bins = append(bins, supervisor.BinaryPrefix+p)
	}
	s := newSupervisor(t, supervisor.Options{PluginDir: pluginDir(t, bins...)})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	manifests := map[string]host.Manifest{}
	var sets [][]definition.Definition
	for _, p := range shipped {
		m, err := s.Describe(ctx, p)
		if err != nil {
			t.Errorf("describe %s: %v", p, err)
			continue
		}
		manifests[p] = m
		// What the agent relies on is what the plugin serves: its documents laid over the
		// definitions the SDK derives from its declarations, not the documents alone.
		defs, err := m.ServedDefinitions()
		if err != nil {
			t.Errorf("plugin %s: served definitions: %v", p, err)
			continue
		}
		for _, d := range definition.CheckAgreement(p, m.Actions, defs) {
			t.Errorf("plugin %s: %v", p, d)
		}
		for _, d := range defs {
			if id := definition.DerivedID(m.Vendor, p, d.Action); id != "" && d.ID != id {
				t.Errorf("plugin %s: definition %s runs action %s, whose derived id is %s: a document that is not its overlay", p, d.ID, d.Action, id)
			}
		}
		sets = append(sets, defs)
		t.Logf("plugin %s %s: %d actions, %d definitions agree", p, m.Version, len(m.Actions), len(defs))
	}
	wfs, err := definitions.Workflows()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := definition.NewCatalog(append(sets, wfs)...); err != nil {
		t.Errorf("catalogue: %v", err)
	}
	for _, w := range wfs {
		m, ok := manifests[w.Plugin]
		if !ok {
			t.Logf("workflow %s not checked: it runs plugin %s, which is not shipped (yet)", w.ID, w.Plugin)
			continue
		}
		for _, d := range definition.CheckWorkflow(w, m.Actions) {
			t.Errorf("%v", d)
		}
	}
}
