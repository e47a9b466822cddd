package definition

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/yuzugo/yuzu/sdk"
)

// Platforms are the operating systems a definition may name, as runtime.GOOS spells
// them.
var Platforms = []string{"windows", "linux", "darwin"}

// Disagreement is one field where a definition and a plugin's declaration differ.
type Disagreement struct {
	// Definition is the definition's id, or "" for a problem of the plugin as a whole.
	Definition string
	// Field names what differs, e.g. "parameters.key.maxLength" or "columns".
	Field string
	// Problem says how, e.g. "definition says 64, plugin declares 65".
	Problem string
}

// Error returns "<definition>: <field>: <problem>".
func (d *Disagreement) Error() string {
	if d.Definition == "" {
		return d.Field + ": " + d.Problem
	}
	return d.Definition + ": " + d.Field + ": " + d.Problem
}

// CheckAgreement compares the definitions a plugin ships with what the plugin declares
// (its actions, their parameters, columns and per-OS support) and returns every
// disagreement, in definition order; nil means they agree. Each definition is held to
// CheckDefinition, and every action must have a definition.
func CheckAgreement(plugin string, actions []sdk.Action, defs []Definition) []*Disagreement {
	var out []*Disagreement
	covered := map[string]bool{}
	for _, d := range defs {
		out = append(out, CheckDefinition(plugin, actions, d)...)
		if d.Plugin == plugin {
			covered[d.Action] = true
		}
	}
	for _, a := range actions {
		if !covered[a.Name] {
			out = append(out, &Disagreement{Field: "action " + a.Name, Problem: "no definition runs it"})
		}
	}
	return out
}

// CheckDefinition compares one definition with the plugin it ships with and returns
// every disagreement; nil means they agree. The definition must run this plugin and one
// of its actions. Their parameters must agree both ways: a definition naming a
// parameter the action does not declare is a problem, and so is a declared parameter
// the definition leaves out. Platforms agree when the definition lists exactly the
// operating systems on which the action is supported or constrained. Unlike
// CheckAgreement, it says nothing of the plugin's other actions, which is what
// `exec DEFINITION-ID` needs before it runs that one definition.
func CheckDefinition(plugin string, actions []sdk.Action, d Definition) []*Disagreement {
	var out []*Disagreement
	bad := func(field, format string, args ...any) {
		out = append(out, &Disagreement{Definition: d.ID, Field: field, Problem: fmt.Sprintf(format, args...)})
	}
	if d.Plugin != plugin {
		bad("spec.execution.plugin", "runs plugin %q, but it ships with plugin %q", d.Plugin, plugin)
		return out
	}
	a, ok := findAction(actions, d.Action)
	if !ok {
		bad("spec.execution.action", "plugin %s has no action %q", plugin, d.Action)
		return out
	}
	checkParams(d, a, false, bad)
	if !slices.Equal(d.Columns, a.Columns) {
		bad("spec.result.columns", "definition says %s, plugin declares %s", columnList(d.Columns), columnList(a.Columns))
	}
	want := availablePlatforms(a)
	if got := sortedPlatforms(d.Platforms); !slices.Equal(got, want) {
		bad("spec.platforms", "definition says [%s], plugin supports %s on [%s]", strings.Join(got, ", "), a.Name, strings.Join(want, ", "))
	}
	return out
}

// CheckWorkflow compares a workflow definition (one kept apart from any plugin, that
// runs a plugin action under its own id) with the action it runs. A workflow may be
// narrower than the action, never different: each parameter both name must agree (a
// workflow may require what the action leaves optional, and may leave out the
// action's default), a parameter the action does
// not declare is allowed (it reaches the action unchecked), a parameter the action
// requires must be in the workflow, the workflow's columns must be columns the action
// writes (a selection, in any order), and its platforms a subset of the action's.
func CheckWorkflow(d Definition, actions []sdk.Action) []*Disagreement {
	var out []*Disagreement
	bad := func(field, format string, args ...any) {
		out = append(out, &Disagreement{Definition: d.ID, Field: field, Problem: fmt.Sprintf(format, args...)})
	}
	a, ok := findAction(actions, d.Action)
	if !ok {
		bad("spec.execution.action", "plugin %s has no action %q", d.Plugin, d.Action)
		return out
	}
	checkParams(d, a, true, bad)
	for _, c := range d.Columns {
		if !slices.Contains(a.Columns, c) {
			bad("spec.result.columns", "%s: %s writes no such column (it writes %s)", columnList([]sdk.Column{c}), a.Name, columnList(a.Columns))
		}
	}
	avail := availablePlatforms(a)
	for _, p := range d.Platforms {
		if !slices.Contains(avail, p) {
			bad("spec.platforms", "%s: %s does not support it (supported on [%s])", p, a.Name, strings.Join(avail, ", "))
		}
	}
	return out
}

// checkParams compares the parameters of d and a. A workflow may omit optional
// declared parameters and add undeclared ones.
func checkParams(d Definition, a sdk.Action, workflow bool, bad func(field, format string, args ...any)) {
	for _, dp := range d.Parameters {
		ap, ok := a.Param(dp.Name)
		if !ok {
			if !workflow {
				bad("spec.parameters."+dp.Name, "the plugin does not declare it")
			}
			continue
		}
		for _, diff := range paramDiffs(&dp, ap) {
			if workflow && diff.field == "required" && dp.Required {
				continue // a workflow may ask for more than the action needs
			}
			if workflow && diff.field == "default" && dp.Default == nil {
				continue // and need not repeat the action's default
			}
			bad("spec.parameters."+dp.Name+"."+diff.field, "definition says %s, plugin declares %s", diff.def, diff.decl)
		}
	}
	for _, ap := range a.Params {
		if _, ok := d.Param(ap.Name); ok {
			continue
		}
		if !workflow || ap.Required {
			bad("spec.parameters."+ap.Name, "declared by the plugin (%s), missing from the definition", ap.Type)
		}
	}
}

type paramDiff struct{ field, def, decl string }

// paramDiffs lists the rules on which a definition's parameter and a declared one
// differ. Descriptions and display names are prose and may differ.
func paramDiffs(dp, ap *sdk.Parameter) []paramDiff {
	var diffs []paramDiff
	cmp := func(field, def, decl string) {
		if def != decl {
			diffs = append(diffs, paramDiff{field, def, decl})
		}
	}
	cmp("type", string(dp.Type), string(ap.Type))
	cmp("required", strconv.FormatBool(dp.Required), strconv.FormatBool(ap.Required))
	cmp("default", optString(dp.Default), optString(ap.Default))
	cmp("minLength", optInt(dp.MinLength), optInt(ap.MinLength))
	cmp("maxLength", optInt(dp.MaxLength), optInt(ap.MaxLength))
	cmp("pattern", orNone(dp.Pattern), orNone(ap.Pattern))
	cmp("enum", enumList(dp.Enum), enumList(ap.Enum))
	cmp("minimum", optInt64(dp.Minimum), optInt64(ap.Minimum))
	cmp("maximum", optInt64(dp.Maximum), optInt64(ap.Maximum))
	return diffs
}

func findAction(actions []sdk.Action, name string) (sdk.Action, bool) {
	i := slices.IndexFunc(actions, func(a sdk.Action) bool { return a.Name == name })
	if i < 0 {
		return sdk.Action{}, false
	}
	return actions[i], true
}

// availablePlatforms lists, in Platforms order, the systems where a is supported or
// constrained.
func availablePlatforms(a sdk.Action) []string {
	var out []string
	for _, p := range Platforms {
		if a.OS(p).Level.Available() {
			out = append(out, p)
		}
	}
	return out
}

// sortedPlatforms puts a definition's platforms in Platforms order.
func sortedPlatforms(ps []string) []string {
	var out []string
	for _, p := range Platforms {
		if slices.Contains(ps, p) {
			out = append(out, p)
		}
	}
	return out
}

func columnList(cols []sdk.Column) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = c.Name + ":" + string(c.Type)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func enumList(vals []string) string {
	if vals == nil {
		return "none"
	}
	return "[" + strings.Join(vals, ", ") + "]"
}

func optString(p *string) string {
	if p == nil {
		return "none"
	}
	return strconv.Quote(*p)
}

func optInt(p *int) string {
	if p == nil {
		return "none"
	}
	return strconv.Itoa(*p)
}

func optInt64(p *int64) string {
	if p == nil {
		return "none"
	}
	return strconv.FormatInt(*p, 10)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return strconv.Quote(s)
}
