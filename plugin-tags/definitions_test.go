package main

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/definition"
	"github.com/yuzugo/yuzu/sdk/sdktest"
)

// shipped returns the definitions the plugin ships, sorted by id, after checking that
// they agree with its declarations both ways (the check `yuzu-agent plugins add`
// applies to any plugin).
func shipped(t *testing.T) []definition.Definition {
	t.Helper()
	defs := sdktest.CheckDefinitions(t, newPlugin())
	slices.SortFunc(defs, func(a, b definition.Definition) int { return strings.Compare(a.ID, b.ID) })
	return defs
}

func col(name string, typ sdk.Type) sdk.Column { return sdk.Column{Name: name, Type: typ} }

// tagsMeta is the upstream metadata of the tags definitions: ids, types, approval,
// roles, columns and parameter rules.
var tagsMeta = []struct {
	id, action, typ, approval string
	roles                     []string
	columns                   []sdk.Column
	params                    string // name:type:required:maxLength:pattern, sorted by name
}{
	{"device.tags.check", "check", definition.TypeQuestion, definition.ApprovalAuto, []string{"endpoint-admin", "endpoint-operator"},
		[]sdk.Column{col("key", sdk.TypeString), col("exists", sdk.TypeBool)}, "key:string:true:64:"},
	{"device.tags.clear", "clear", definition.TypeAction, definition.ApprovalRoleGated, []string{"endpoint-admin"},
		[]sdk.Column{col("cleared_count", sdk.TypeInt32)}, ""},
	{"device.tags.count", "count", definition.TypeQuestion, definition.ApprovalAuto, []string{"endpoint-admin", "endpoint-operator"},
		[]sdk.Column{col("count", sdk.TypeInt32)}, ""},
	{"device.tags.delete", "delete", definition.TypeAction, definition.ApprovalAuto, []string{"endpoint-admin", "endpoint-operator"},
		[]sdk.Column{col("key", sdk.TypeString), col("found", sdk.TypeBool)}, "key:string:true:64:"},
	{"device.tags.get", "get", definition.TypeQuestion, definition.ApprovalAuto, []string{"endpoint-admin", "endpoint-operator"},
		[]sdk.Column{col("key", sdk.TypeString), col("value", sdk.TypeString)}, "key:string:true:64:"},
	{"device.tags.get_all", "get_all", definition.TypeQuestion, definition.ApprovalAuto, []string{"endpoint-admin", "endpoint-operator"},
		[]sdk.Column{col("key", sdk.TypeString), col("value", sdk.TypeString), col("count", sdk.TypeInt32)}, ""},
	{"device.tags.set", "set", definition.TypeAction, definition.ApprovalAuto, []string{"endpoint-admin", "endpoint-operator"},
		[]sdk.Column{col("key", sdk.TypeString), col("value", sdk.TypeString)}, `key:string:true:64:^[a-zA-Z0-9_.:\-]+$ value:string:false:448:`},
}

func paramSummary(d definition.Definition) string {
	var parts []string
	for _, p := range d.Parameters {
		max := ""
		if p.MaxLength != nil {
			max = strconv.Itoa(*p.MaxLength)
		}
		extra := p.MinLength != nil || p.Minimum != nil || p.Maximum != nil || p.Enum != nil || p.Default != nil
		s := p.Name + ":" + string(p.Type) + ":" + strconv.FormatBool(p.Required) + ":" + max + ":" + p.Pattern
		if extra {
			s += ":unexpected-extra-rules"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestShippedDefinitions(t *testing.T) {
	got := shipped(t)
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
	case []sdk.Column:
		return slices.Equal(x, b.([]sdk.Column))
	}
	return a == b
}

// clear is the only destructive tags action: role-gated and endpoint-admin only.
func TestTagsClearIsTheOnlyGatedAction(t *testing.T) {
	for _, d := range shipped(t) {
		gated := d.Approval == definition.ApprovalRoleGated || slices.Equal(d.ExecuteRoles, []string{"endpoint-admin"})
		if gated != (d.ID == "device.tags.clear") {
			t.Errorf("%s: approval %s, executeRoles %v", d.ID, d.Approval, d.ExecuteRoles)
		}
	}
}
