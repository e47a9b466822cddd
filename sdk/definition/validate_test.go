package definition

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/yuzugo/yuzu/sdk"
)

// sampleYAML declares one parameter of every type and every rule, so that each rule
// of Validate can be exercised on its own.
const sampleYAML = `apiVersion: yuzu.io/v1alpha1
kind: InstructionDefinition
metadata:
  id: test.sample.run
  displayName: Sample
  version: 1.0.0
spec:
  type: question
  platforms: [linux]
  execution:
    plugin: sample
    action: run
  parameters:
    type: object
    required: [name]
    properties:
      name:
        type: string
        validation:
          minLength: 2
          maxLength: 8
          pattern: 'ab|cd.*'
      format:
        type: string
        default: json
        validation:
          enum: [json, csv]
      limit:
        type: int32
        default: 10
        validation:
          minimum: 1
          maximum: 1000
      offset:
        type: int64
      level:
        type: int32
        validation:
          enum: [1, 2, 3]
      recursive:
        type: bool
        default: false
  result:
    columns:
      - name: value
        type: string
  gather:
    ttlSeconds: 120
  approval:
    mode: auto
`

func mustSample(t *testing.T) Definition {
	t.Helper()
	defs, err := Parse("sample.yaml", []byte(sampleYAML))
	if err != nil {
		t.Fatalf("Parse sample: %v", err)
	}
	if len(defs) != 1 {
		t.Fatalf("Parse sample: got %d definitions, want 1", len(defs))
	}
	return defs[0]
}

func mustLookup(t *testing.T, id string) Definition {
	t.Helper()
	d, ok := loadFixture(t).Lookup(id)
	if !ok {
		t.Fatalf("Lookup(%s): not found", id)
	}
	return d
}

func TestValidateSample(t *testing.T) {
	d := mustSample(t)
	ok := func(extra map[string]string) map[string]string {
		m := map[string]string{"name": "ab"}
		maps.Copy(m, extra)
		return m
	}
	cases := []struct {
		name   string
		params map[string]string
		want   string // "" means valid
	}{
		{"only the required parameter", ok(nil), ""},
		{"every parameter valid", ok(map[string]string{"format": "csv", "limit": "1000", "offset": "-5", "level": "3", "recursive": "true"}), ""},
		{"required absent", map[string]string{}, "missing required parameter: name"},
		{"required present but empty", map[string]string{"name": ""}, "missing required parameter: name"},
		{"nil map", nil, "missing required parameter: name"},
		{"unknown parameter", ok(map[string]string{"color": "red"}), "parameter color: unknown parameter for test.sample.run"},
		{"unknown parameter with empty name", ok(map[string]string{"": "x"}), "parameter : unknown parameter for test.sample.run"},

		{"minLength", map[string]string{"name": "a"}, "parameter name: shorter than minLength 2 (1 bytes)"},
		{"maxLength exact", map[string]string{"name": "cd345678"}, ""},
		{"maxLength", map[string]string{"name": "cd3456789"}, "parameter name: exceeds maxLength 8 (9 bytes)"},
		{"maxLength counts bytes", map[string]string{"name": "cdxééé"}, "parameter name: exceeds maxLength 8 (9 bytes)"},
		{"pattern alternative", map[string]string{"name": "cdxyz"}, ""},
		{"pattern anchored at the end", map[string]string{"name": "abx"}, "parameter name: does not match pattern ab|cd.*"},
		{"pattern anchored at the start", map[string]string{"name": "xcd"}, "parameter name: does not match pattern ab|cd.*"},

		{"enum member", ok(map[string]string{"format": "json"}), ""},
		{"enum non-member", ok(map[string]string{"format": "xml"}), `parameter format: must be one of json, csv (got "xml")`},
		{"enum is case sensitive", ok(map[string]string{"format": "JSON"}), `parameter format: must be one of json, csv (got "JSON")`},
		{"optional present but empty is checked", ok(map[string]string{"format": ""}), `parameter format: must be one of json, csv (got "")`},

		{"int32 plus sign", ok(map[string]string{"limit": "+12"}), ""},
		{"int32 junk", ok(map[string]string{"limit": "12abc"}), `parameter limit: not a valid int32: "12abc"`},
		{"int32 leading space", ok(map[string]string{"limit": " 12"}), `parameter limit: not a valid int32: " 12"`},
		{"int32 trailing space", ok(map[string]string{"limit": "12 "}), `parameter limit: not a valid int32: "12 "`},
		{"int32 empty", ok(map[string]string{"limit": ""}), `parameter limit: not a valid int32: ""`},
		{"int32 underscore", ok(map[string]string{"limit": "1_0"}), `parameter limit: not a valid int32: "1_0"`},
		{"int32 hex", ok(map[string]string{"limit": "0x10"}), `parameter limit: not a valid int32: "0x10"`},
		{"int32 decimal point", ok(map[string]string{"limit": "10.0"}), `parameter limit: not a valid int32: "10.0"`},
		{"int32 below minimum", ok(map[string]string{"limit": "0"}), "parameter limit: 0 is below minimum 1"},
		{"int32 minus zero", ok(map[string]string{"limit": "-0"}), "parameter limit: 0 is below minimum 1"},
		{"int32 above maximum", ok(map[string]string{"limit": "1001"}), "parameter limit: 1001 is above maximum 1000"},
		{"int32 minimum inclusive", ok(map[string]string{"limit": "1"}), ""},
		{"int32 out of type range", ok(map[string]string{"limit": "2147483648"}), `parameter limit: "2147483648" is out of range for int32`},
		{"int32 out of type range long", ok(map[string]string{"limit": strings.Repeat("9", 100)}),
			`parameter limit: "` + strings.Repeat("9", 64) + `"... is out of range for int32`},
		{"int32 enum member", ok(map[string]string{"level": "2"}), ""},
		{"int32 enum non-member", ok(map[string]string{"level": "4"}), `parameter level: must be one of 1, 2, 3 (got "4")`},
		{"int32 enum compares text", ok(map[string]string{"level": "02"}), `parameter level: must be one of 1, 2, 3 (got "02")`},
		{"int64 max", ok(map[string]string{"offset": "9223372036854775807"}), ""},
		{"int64 min", ok(map[string]string{"offset": "-9223372036854775808"}), ""},
		{"int64 out of range", ok(map[string]string{"offset": "9223372036854775808"}), `parameter offset: "9223372036854775808" is out of range for int64`},
		{"int64 junk", ok(map[string]string{"offset": "5s"}), `parameter offset: not a valid int64: "5s"`},

		{"bool false", ok(map[string]string{"recursive": "false"}), ""},
		{"bool upper case", ok(map[string]string{"recursive": "TRUE"}), `parameter recursive: must be true or false (got "TRUE")`},
		{"bool one", ok(map[string]string{"recursive": "1"}), `parameter recursive: must be true or false (got "1")`},
		{"bool empty", ok(map[string]string{"recursive": ""}), `parameter recursive: must be true or false (got "")`},

		// One row, as the plugin would answer: the first declared parameter that fails,
		// and unknown parameters only once every declared one passes.
		{"several problems: the first declared", map[string]string{"zeta": "1", "limit": "x", "color": "red", "recursive": "yes"},
			`parameter limit: not a valid int32: "x"`},
		{"several unknown: the first by name", map[string]string{"zeta": "1", "name": "ab", "color": "red"},
			`parameter color: unknown parameter for test.sample.run`},
		{"first failing rule per parameter", map[string]string{"name": "a b c d e f"}, "parameter name: exceeds maxLength 8 (11 bytes)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before map[string]string
			if c.params != nil {
				before = maps.Clone(c.params)
			}
			err := d.Validate(c.params)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Errorf("Validate(%q):\n got %q\nwant %q", c.params, got, c.want)
			}
			if c.params != nil && !maps.Equal(before, c.params) {
				t.Errorf("Validate changed its input: %q, was %q (defaults must not be injected)", c.params, before)
			}
		})
	}
}

// docs/definitions.md quotes these texts; tags users see them verbatim.
func TestValidateTags(t *testing.T) {
	cases := []struct {
		id     string
		params map[string]string
		want   string
	}{
		{"device.tags.set", map[string]string{"key": "env", "value": "prod"}, ""},
		{"device.tags.set", map[string]string{"key": "a.b:c-d_E9"}, ""},
		{"device.tags.set", map[string]string{"key": "env", "value": ""}, ""},
		{"device.tags.set", map[string]string{"key": strings.Repeat("k", 64)}, ""},
		{"device.tags.set", map[string]string{"key": strings.Repeat("k", 65)}, "parameter key: exceeds maxLength 64 (65 bytes)"},
		{"device.tags.set", map[string]string{"key": "env prod"}, `parameter key: does not match pattern ^[a-zA-Z0-9_.:\-]+$`},
		{"device.tags.set", map[string]string{"key": "env\n"}, `parameter key: does not match pattern ^[a-zA-Z0-9_.:\-]+$`},
		{"device.tags.set", map[string]string{"key": "café"}, `parameter key: does not match pattern ^[a-zA-Z0-9_.:\-]+$`},
		{"device.tags.set", map[string]string{"key": "env", "value": strings.Repeat("v", 448)}, ""},
		{"device.tags.set", map[string]string{"key": "env", "value": strings.Repeat("é", 224)}, ""},
		{"device.tags.set", map[string]string{"key": "env", "value": strings.Repeat("v", 447) + "é"}, "parameter value: exceeds maxLength 448 (449 bytes)"},
		{"device.tags.set", map[string]string{"key": "env", "color": "red"}, "parameter color: unknown parameter for device.tags.set"},
		{"device.tags.set", map[string]string{"value": "prod"}, "missing required parameter: key"},
		{"device.tags.set", map[string]string{"key": ""}, "missing required parameter: key"},
		{"device.tags.get", map[string]string{"key": "env prod"}, ""}, // only set carries the pattern upstream
		{"device.tags.get", map[string]string{"key": strings.Repeat("k", 65)}, "parameter key: exceeds maxLength 64 (65 bytes)"},
		{"device.tags.get", map[string]string{}, "missing required parameter: key"},
		{"device.tags.delete", map[string]string{"key": "env", "value": "x"}, "parameter value: unknown parameter for device.tags.delete"},
		{"device.tags.check", map[string]string{"key": ""}, "missing required parameter: key"},
		{"device.tags.get_all", nil, ""},
		{"device.tags.get_all", map[string]string{"key": "env"}, "parameter key: unknown parameter for device.tags.get_all"},
		{"device.tags.clear", map[string]string{}, ""},
		{"device.tags.clear", map[string]string{"force": "true"}, "parameter force: unknown parameter for device.tags.clear"},
		{"device.tags.count", map[string]string{}, ""},
	}
	for _, c := range cases {
		err := mustLookup(t, c.id).Validate(c.params)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s Validate(%q):\n got %q\nwant %q", c.id, c.params, got, c.want)
		}
	}
}

func TestValidateErrorType(t *testing.T) {
	d := mustSample(t)
	err := d.Validate(map[string]string{"limit": "x"})
	var pe *ParamError
	if !errors.As(err, &pe) || pe.Param != "limit" || pe.Rule != "type" {
		t.Fatalf("Validate error %#v, want a *ParamError for limit, rule type (name, also missing, sorts after limit)", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("message spans lines: %q", err.Error())
	}
	err = d.Validate(map[string]string{"name": "ab", "zz": "1"})
	if !errors.As(err, &pe) || pe.Param != "zz" || pe.Rule != "" {
		t.Errorf("Validate error %#v, want a *ParamError for zz with no rule", err)
	}
}

// A Definition built by hand (not by Parse) has no compiled pattern; Validate must
// still apply the pattern, and say so when it cannot compile.
func TestValidateHandBuilt(t *testing.T) {
	max := 3
	d := Definition{ID: "hand.made", Parameters: []Parameter{
		{Name: "z", Type: TypeString, Pattern: "[0-9]+", MaxLength: &max},
		{Name: "a", Type: TypeString, Pattern: "(", Required: true},
		{Name: "m", Type: "float"},
	}}
	cases := []struct {
		params map[string]string
		want   string
	}{
		{map[string]string{"a": "x", "z": "12"}, "parameter a: the declared pattern is invalid: error parsing regexp: missing closing ): `(`"},
		// In the order the parameters are listed, as the plugin checks its own.
		{map[string]string{"a": "", "z": "12x"}, "parameter z: does not match pattern [0-9]+"},
		{map[string]string{"a": "", "z": "1234"}, "parameter z: exceeds maxLength 3 (4 bytes)"},
		{map[string]string{"a": "", "m": "1.5"}, "missing required parameter: a"},
	}
	for _, c := range cases {
		err := d.Validate(c.params)
		if err == nil || err.Error() != c.want {
			t.Errorf("Validate(%q) = %v, want %q", c.params, err, c.want)
		}
	}
}

// Parse compiles each pattern once (sdk.Parameter.Compile): checking a value against a
// parsed parameter must cost far less than against the same rules written by hand,
// which Check can only obey by compiling the pattern on every call.
func TestParsedPatternIsCompiledOnce(t *testing.T) {
	key, ok := mustLookup(t, "device.tags.set").Param("key")
	if !ok || key.Pattern == "" {
		t.Fatalf("device.tags.set key = %+v; the test needs its pattern", key)
	}
	byHand := Parameter{Name: key.Name, Type: key.Type, Pattern: key.Pattern, MaxLength: key.MaxLength}
	check := func(p *Parameter) float64 {
		return testing.AllocsPerRun(50, func() {
			if _, problem := p.Check("env.prod"); problem != "" {
				t.Fatal(problem)
			}
		})
	}
	parsed, hand := check(&key), check(&byHand)
	if hand < 10 || parsed*4 > hand {
		t.Errorf("Check allocates %.1f times on the parsed key, %.1f on a hand-built copy; want the parsed one to compile nothing", parsed, hand)
	}
}

// BenchmarkValidate measures the check `exec DEFINITION-ID` runs on a parsed definition
// whose key parameter carries a pattern: Parse compiles that pattern once, so no
// Validate should compile it again.
func BenchmarkValidate(b *testing.B) {
	set, ok := loadFixture(b).Lookup("device.tags.set")
	if !ok {
		b.Fatal("device.tags.set missing")
	}
	params := map[string]string{"key": "env.prod", "value": "eu-west"}
	b.ReportAllocs()
	for b.Loop() {
		if err := set.Validate(params); err != nil {
			b.Fatal(err)
		}
	}
}

// WithDeclaration makes Validate answer what the plugin answers: the plugin's order
// and its declared messages, with the definition's own rules.
func TestValidateWithDeclaration(t *testing.T) {
	d := mustSample(t)
	p := sdk.New("sample", "1", "")
	p.Handle("run", func(context.Context, *sdk.Request, *sdk.Output) (sdk.Result, error) { return sdk.Done(), nil },
		sdk.Param("limit", sdk.TypeInt32, "", sdk.Default("10"), sdk.Minimum(1), sdk.Maximum(1000),
			sdk.Message(sdk.RuleType, "limit must be a number, got {value}")),
		sdk.Param("name", sdk.TypeString, "", sdk.Required(), sdk.MinLength(2), sdk.MaxLength(8),
			sdk.Message(sdk.RuleRequired, "say who: name is required")),
	)
	a := p.Actions()[0]
	w := d.WithDeclaration(a)
	if got := []string{w.Parameters[0].Name, w.Parameters[1].Name, w.Parameters[2].Name}; got[0] != "limit" || got[1] != "name" || got[2] != "format" {
		t.Errorf("order %q, want limit, name, then the rest by name", got)
	}
	cases := []struct {
		params map[string]string
		want   string
	}{
		{map[string]string{"limit": "x"}, "limit must be a number, got x"}, // limit first, as declared
		{map[string]string{}, "say who: name is required"},
		{map[string]string{"name": "ab", "recursive": "yes"}, `parameter recursive: must be true or false (got "yes")`},
	}
	for _, c := range cases {
		err := w.Validate(c.params)
		if err == nil || err.Error() != c.want {
			t.Errorf("Validate(%q) = %v, want %q", c.params, err, c.want)
		}
		if want := sdk.CheckParams(a.Params, c.params); want != nil && !strings.HasPrefix(c.want, "parameter recursive") && want.Error() != c.want {
			t.Errorf("plugin answers %q for %q, the definition %q", want, c.params, c.want)
		}
	}
	if _, ok := d.Param("limit"); !ok || d.Parameters[0].Name != "format" || d.Parameters[2].Messages != nil {
		t.Errorf("WithDeclaration changed the definition it was called on: %+v", d.Parameters)
	}
}
