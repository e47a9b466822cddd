package definitions

import (
	"slices"
	"strings"
	"testing"

	"github.com/yuzugo/yuzu/sdk/definition"
)

// The workflows parse, and each says what it runs; their agreement with the actions
// they run is checked where the plugins are built (integration).
func TestWorkflows(t *testing.T) {
	defs, err := Workflows()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"workflow.config_search_and_replace": "filesystem/replace",
		"workflow.version_compliance_check":  "filesystem/get_version_info",
	}
	if len(defs) != len(want) {
		t.Fatalf("%d workflows, want %d", len(defs), len(want))
	}
	for _, d := range defs {
		if got := d.Plugin + "/" + d.Action; want[d.ID] != got {
			t.Errorf("%s runs %s, want %s", d.ID, got, want[d.ID])
		}
		if !strings.HasPrefix(d.ID, "workflow.") || d.Version != "0.4.0" || d.MinAgentVersion != "0.4.0" {
			t.Errorf("%s: id, version or minAgentVersion off: %+v", d.ID, d)
		}
	}
	again, _ := Workflows()
	if &again[0] != &defs[0] {
		t.Error("Workflows parsed twice; it must parse once")
	}
	replace := defs[slices.IndexFunc(defs, func(d0 definition.Definition) bool { return d0.ID == "workflow.config_search_and_replace" })]
	if replace.Approval != "role-gated" || !slices.Equal(replace.ExecuteRoles, []string{"endpoint-admin"}) {
		t.Errorf("config_search_and_replace must be role-gated for endpoint-admin only: %+v", replace)
	}
}
