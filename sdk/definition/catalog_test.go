package definitions

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func mustLoad(t *testing.T) *Catalog {
	t.Helper()
	c, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

func TestLoadIsCached(t *testing.T) {
	a, b := mustLoad(t), mustLoad(t)
	if a != b {
		t.Error("Load returned two different catalogues; it must parse once")
	}
}

func TestAllSortedAndUnique(t *testing.T) {
	all := mustLoad(t).All()
	if len(all) == 0 {
		t.Fatal("embedded catalogue is empty")
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].ID >= all[i].ID {
			t.Errorf("All() not strictly sorted: %s before %s", all[i-1].ID, all[i].ID)
		}
	}
}

// tagsMeta is CONTRACT 5.2's metadata table for the tags plugin.
var tagsMeta = []struct {
	id, action, typ, approval string
	roles                     []string
	columns                   []Column
	params                    string // name:type:required:maxLength:pattern, sorted by name
}{
	{"device.tags.check", "check", TypeQuestion, ApprovalAuto, []string{"endpoint-admin", "endpoint-operator"},
		[]Column{{"key", TypeString}, {"exists", TypeBool}}, "key:string:true:64:"},
	{"device.tags.clear", "clear", TypeAction, ApprovalRoleGated, []string{"endpoint-admin"},
		[]Column{{"cleared_count", TypeInt32}}, ""},
	{"device.tags.count", "count", TypeQuestion, ApprovalAuto, []string{"endpoint-admin", "endpoint-operator"},
		[]Column{{"count", TypeInt32}}, ""},
	{"device.tags.delete", "delete", TypeAction, ApprovalAuto, []string{"endpoint-admin", "endpoint-operator"},
		[]Column{{"key", TypeString}, {"found", TypeBool}}, "key:string:true:64:"},
	{"device.tags.get", "get", TypeQuestion, ApprovalAuto, []string{"endpoint-admin", "endpoint-operator"},
		[]Column{{"key", TypeString}, {"value", TypeString}}, "key:string:true:64:"},
	{"device.tags.get_all", "get_all", TypeQuestion, ApprovalAuto, []string{"endpoint-admin", "endpoint-operator"},
		[]Column{{"key", TypeString}, {"value", TypeString}, {"count", TypeInt32}}, ""},
	{"device.tags.set", "set", TypeAction, ApprovalAuto, []string{"endpoint-admin", "endpoint-operator"},
		[]Column{{"key", TypeString}, {"value", TypeString}}, `key:string:true:64:^[a-zA-Z0-9_.:\-]+$ value:string:false:448:`},
}

func paramSummary(d Definition) string {
	var parts []string
	for _, p := range d.Parameters {
		max := ""
		if p.MaxLength != nil {
			max = strconv.Itoa(*p.MaxLength)
		}
		extra := p.MinLength != nil || p.Minimum != nil || p.Maximum != nil || p.Enum != nil || p.Default != nil
		s := p.Name + ":" + p.Type + ":" + strconv.FormatBool(p.Required) + ":" + max + ":" + p.Pattern
		if extra {
			s += ":unexpected-extra-rules"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestEmbeddedTagsDefinitions(t *testing.T) {
	c := mustLoad(t)
	got := c.ForPlugin("tags")
	var ids []string
	for _, d := range got {
		ids = append(ids, d.ID)
	}
	var want []string
	for _, m := range tagsMeta {
		want = append(want, m.id)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("ForPlugin(tags) = %v, want exactly %v", ids, want)
	}
	for _, d := range c.All() {
		if strings.HasPrefix(d.ID, "device.tags.") && d.Plugin != "tags" {
			t.Errorf("%s runs plugin %q, not tags", d.ID, d.Plugin)
		}
	}
	placeholder := regexp.MustCompile(`\$\{([^}]*)\}`)

	for i, m := range tagsMeta {
		d := got[i]
		t.Run(m.id, func(t *testing.T) {
			checks := []struct {
				field     string
				got, want any
			}{
				{"version", d.Version, "0.1.0"},
				{"type", d.Type, m.typ},
				{"platforms", d.Platforms, []string{"windows", "linux", "darwin"}},
				{"plugin", d.Plugin, "tags"},
				{"action", d.Action, m.action},
				{"concurrency", d.Concurrency, "per-device"},
				{"ttlSeconds", d.TTLSeconds, 60},
				{"TTL()", d.TTL(), 60 * time.Second},
				{"approval", d.Approval, m.approval},
				{"executeRoles", d.ExecuteRoles, m.roles},
				{"authorRoles", d.AuthorRoles, []string{"content-author"}},
				{"columns", d.Columns, m.columns},
				{"parameters", paramSummary(d), m.params},
				{"minAgentVersion", d.MinAgentVersion, "0.1.0"},
				{"requiredPlugins", d.RequiredPlugins, []string{"tags"}},
				{"phase", d.Phase, "active"},
				{"source", strings.HasPrefix(d.Source, "tags.yaml: document "), true},
			}
			for _, c := range checks {
				if !equalAny(c.got, c.want) {
					t.Errorf("%s = %v, want %v", c.field, c.got, c.want)
				}
			}
			if d.DisplayName == "" || d.ReadablePayload == "" {
				t.Errorf("displayName %q and readablePayload %q must both be set", d.DisplayName, d.ReadablePayload)
			}
			if !strings.Contains(d.Description, "cannot tell you") {
				t.Errorf("description does not say what it cannot tell you: %q", d.Description)
			}
			for _, ph := range placeholder.FindAllStringSubmatch(d.ReadablePayload, -1) {
				if _, ok := d.Param(ph[1]); !ok {
					t.Errorf("readablePayload names ${%s}, which is not a parameter", ph[1])
				}
			}
		})
	}
}

func equalAny(a, b any) bool {
	switch x := a.(type) {
	case []string:
		return slices.Equal(x, b.([]string))
	case []Column:
		return slices.Equal(x, b.([]Column))
	}
	return a == b
}

// clear is the only destructive tags action: role-gated and endpoint-admin only.
func TestTagsClearIsTheOnlyGatedAction(t *testing.T) {
	for _, d := range mustLoad(t).ForPlugin("tags") {
		gated := d.Approval == ApprovalRoleGated || slices.Equal(d.ExecuteRoles, []string{"endpoint-admin"})
		if gated != (d.ID == "device.tags.clear") {
			t.Errorf("%s: approval %s, executeRoles %v", d.ID, d.Approval, d.ExecuteRoles)
		}
	}
}

func TestLookup(t *testing.T) {
	c := mustLoad(t)
	cases := []struct {
		id string
		ok bool
	}{
		{"device.tags.set", true},
		{"device.tags.clear", true},
		{"device.tags.nope", false},
		{"", false},
		{"DEVICE.TAGS.SET", false},
	}
	for _, tc := range cases {
		d, ok := c.Lookup(tc.id)
		if ok != tc.ok || (ok && d.ID != tc.id) || (!ok && d.ID != "") {
			t.Errorf("Lookup(%q) = %q, %v; want found=%v", tc.id, d.ID, ok, tc.ok)
		}
	}
	if got := c.ForPlugin("nope"); got == nil || len(got) != 0 {
		t.Errorf("ForPlugin(nope) = %#v, want an empty slice", got)
	}
}

// A caller that edits what it got must not change what the next caller gets.
func TestReturnedDefinitionsAreCopies(t *testing.T) {
	c := mustLoad(t)
	d, _ := c.Lookup("device.tags.set")
	d.Platforms[0] = "plan9"
	*d.Parameters[0].MaxLength = 1
	d.Parameters[0].Name = "renamed"
	d.Columns[0].Name = "renamed"
	for _, all := range [][]Definition{c.All(), c.ForPlugin("tags")} {
		for _, a := range all {
			if a.ID != "device.tags.set" {
				continue
			}
			a.ExecuteRoles[0] = "nobody"
		}
	}
	again, _ := c.Lookup("device.tags.set")
	if again.Platforms[0] != "windows" || *again.Parameters[0].MaxLength != 64 || again.Parameters[0].Name != "key" ||
		again.Columns[0].Name != "key" || again.ExecuteRoles[0] != "endpoint-admin" {
		t.Errorf("catalogue changed through a returned copy: %+v", again)
	}
	if err := again.Validate(map[string]string{"key": "ab"}); err != nil {
		t.Errorf("Validate after copies were edited: %v", err)
	}
}
