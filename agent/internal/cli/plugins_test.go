package cli

import (
	"testing"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
)

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
