package definition

import (
	"context"
	"strings"
	"testing"

	"github.com/yuzugo/yuzu/sdk"
)

func nop(context.Context, *sdk.Request, *sdk.Output) (sdk.Result, error) {
	return sdk.Done(), nil
}

// samplePlugin declares exactly what sampleYAML defines.
func samplePlugin() *sdk.Plugin {
	p := sdk.New("sample", "1.0.0", "")
	p.Handle("run", nop,
		sdk.Param("name", sdk.TypeString, "", sdk.Required(), sdk.MinLength(2), sdk.MaxLength(8), sdk.Pattern("ab|cd.*")),
		sdk.Param("format", sdk.TypeString, "", sdk.Default("json"), sdk.Enum("json", "csv")),
		sdk.Param("limit", sdk.TypeInt32, "", sdk.Default("10"), sdk.Minimum(1), sdk.Maximum(1000), sdk.Clamped()),
		sdk.Param("offset", sdk.TypeInt64, ""),
		sdk.Param("level", sdk.TypeInt32, "", sdk.Enum("1", "2", "3")),
		sdk.Param("recursive", sdk.TypeBool, "", sdk.Default("false")),
		sdk.Row("row", "value"),
		sdk.OnLinux(sdk.OSSupport{Level: sdk.SupportSupported}),
		sdk.OnWindows(sdk.OSSupport{Level: sdk.SupportUnsupported}),
	)
	return p
}

func TestCheckAgreement(t *testing.T) {
	check := func(yaml string, p *sdk.Plugin) string {
		t.Helper()
		defs, err := Parse("sample.yaml", []byte(yaml))
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		var out []string
		for _, d := range CheckAgreement(p.Name, p.Actions(), defs) {
			out = append(out, d.Error())
		}
		return strings.Join(out, "\n")
	}
	if got := check(sampleYAML, samplePlugin()); got != "" {
		t.Fatalf("the sample agrees with its declaration, got:\n%s", got)
	}
	cases := []struct {
		name     string
		old, new string
		want     string
	}{
		{"maxLength", "maxLength: 8", "maxLength: 9", "test.sample.run: spec.parameters.name.maxLength: definition says 9, plugin declares 8"},
		{"type", "offset:\n        type: int64", "offset:\n        type: int32", "test.sample.run: spec.parameters.offset.type: definition says int32, plugin declares int64"},
		{"required", "required: [name]", "required: [name, offset]", "test.sample.run: spec.parameters.offset.required: definition says true, plugin declares false"},
		{"pattern", "pattern: 'ab|cd.*'", "pattern: 'ab|cd'", `test.sample.run: spec.parameters.name.pattern: definition says "ab|cd", plugin declares "ab|cd.*"`},
		{"enum", "enum: [json, csv]", "enum: [csv, json]", "test.sample.run: spec.parameters.format.enum: definition says [csv, json], plugin declares [json, csv]"},
		{"default", "default: json", "default: csv", `test.sample.run: spec.parameters.format.default: definition says "csv", plugin declares "json"`},
		{"minimum", "minimum: 1", "minimum: 0", "test.sample.run: spec.parameters.limit.minimum: definition says 0, plugin declares 1"},
		{"undeclared parameter", "      recursive:", "      extra:\n        type: string\n      recursive:", "test.sample.run: spec.parameters.extra: the plugin does not declare it"},
		{"undefined parameter", "      offset:\n        type: int64\n", "", "test.sample.run: spec.parameters.offset: declared by the plugin (int64), missing from the definition"},
		{"column", "name: value", "name: values", "test.sample.run: spec.result.columns: definition says [values:string], plugin declares [value:string]"},
		{"platforms", "platforms: [linux]", "platforms: [linux, windows]", "test.sample.run: spec.platforms: definition says [windows, linux], plugin supports run on [linux]"},
		{"action", "action: run", "action: walk", `test.sample.run: spec.execution.action: plugin sample has no action "walk"`},
		{"plugin", "plugin: sample", "plugin: other", `test.sample.run: spec.execution.plugin: runs plugin "other", but it ships with plugin "sample"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			yaml := strings.Replace(sampleYAML, c.old, c.new, 1)
			if yaml == sampleYAML {
				t.Fatalf("the mutation %q did not apply", c.old)
			}
			got := check(yaml, samplePlugin())
			if !strings.Contains(got, c.want) {
				t.Errorf("got:\n%s\nwant a line:\n%s", got, c.want)
			}
		})
	}
	// An action without a definition is a problem too.
	p := samplePlugin()
	p.Handle("extra", nop, sdk.OnAll(sdk.OSSupport{Level: sdk.SupportSupported}))
	if got := check(sampleYAML, p); got != "action extra: no definition runs it" {
		t.Errorf("uncovered action: %q", got)
	}
}

// CheckDefinition holds one definition to the plugin and, unlike CheckAgreement, says
// nothing of the plugin's other actions: exec DEFINITION-ID checks only the definition
// it runs.
func TestCheckDefinition(t *testing.T) {
	p := samplePlugin()
	p.Handle("extra", nop, sdk.OnAll(sdk.OSSupport{Level: sdk.SupportSupported}))
	check := func(yaml, plugin string) string {
		t.Helper()
		defs, err := Parse("sample.yaml", []byte(yaml))
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		var out []string
		for _, d := range CheckDefinition(plugin, p.Actions(), defs[0]) {
			out = append(out, d.Error())
		}
		return strings.Join(out, "\n")
	}
	if got := check(sampleYAML, p.Name); got != "" {
		t.Errorf("the sample agrees with its action; the uncovered action is not its business, got:\n%s", got)
	}
	if got, want := check(strings.Replace(sampleYAML, "maxLength: 8", "maxLength: 9", 1), p.Name),
		"test.sample.run: spec.parameters.name.maxLength: definition says 9, plugin declares 8"; got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if got, want := check(sampleYAML, "other"),
		`test.sample.run: spec.execution.plugin: runs plugin "sample", but it ships with plugin "other"`; got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestCheckWorkflow(t *testing.T) {
	actions := samplePlugin().Actions()
	wf := func(yaml string) string {
		t.Helper()
		yaml = strings.Replace(yaml, "id: test.sample.run", "id: workflow.sample", 1)
		defs, err := Parse("wf.yaml", []byte(yaml))
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		var out []string
		for _, d := range CheckWorkflow(defs[0], actions) {
			out = append(out, d.Error())
		}
		return strings.Join(out, "\n")
	}
	narrower := strings.NewReplacer(
		"required: [name]", "required: [name, offset]", // may require more
		"      recursive:\n        type: bool\n        default: false\n", "      recursive:\n        type: bool\n", // may drop a default
		"      level:", "      note:\n        type: string\n      level:", // may add an undeclared parameter
	).Replace(sampleYAML)
	if got := wf(narrower); got != "" {
		t.Errorf("a narrower workflow is fine, got:\n%s", got)
	}
	if got := wf(strings.Replace(sampleYAML, "maxLength: 8", "maxLength: 7", 1)); !strings.Contains(got, "spec.parameters.name.maxLength: definition says 7, plugin declares 8") {
		t.Errorf("a different rule: %q", got)
	}
	if got := wf(strings.Replace(sampleYAML, "required: [name]", "required: []", 1)); !strings.Contains(got, "spec.parameters.name.required: definition says false, plugin declares true") {
		t.Errorf("dropping a required parameter: %q", got)
	}
	if got := wf(strings.Replace(sampleYAML, "name: value", "name: other", 1)); !strings.Contains(got, "writes no such column") {
		t.Errorf("an unknown column: %q", got)
	}
	if got := wf(strings.Replace(sampleYAML, "platforms: [linux]", "platforms: [windows]", 1)); !strings.Contains(got, "spec.platforms: windows: run does not support it") {
		t.Errorf("an unsupported platform: %q", got)
	}
}
