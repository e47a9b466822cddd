package definition

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

func TestParseSample(t *testing.T) {
	d := mustSample(t)
	if d.ID != "test.sample.run" || d.Type != TypeQuestion || d.Plugin != "sample" || d.Action != "run" ||
		d.Approval != ApprovalAuto || d.TTLSeconds != 120 || d.TTL() != 120*time.Second ||
		d.Source != "sample.yaml: document 1" {
		t.Errorf("flattened fields wrong: %+v", d)
	}
	if strings.Join(d.Platforms, ",") != "linux" || !d.SupportsPlatform("linux") || d.SupportsPlatform("windows") {
		t.Errorf("platforms = %v", d.Platforms)
	}
	var names []string
	for _, p := range d.Parameters {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, ","); got != "format,level,limit,name,offset,recursive" {
		t.Errorf("parameters = %s, want sorted by name", got)
	}
	defaults := map[string]string{"format": "json", "limit": "10", "recursive": "false"}
	for _, p := range d.Parameters {
		want, has := defaults[p.Name]
		switch {
		case has && (p.Default == nil || *p.Default != want):
			t.Errorf("%s default = %v, want %q", p.Name, p.Default, want)
		case !has && p.Default != nil:
			t.Errorf("%s default = %q, want none", p.Name, *p.Default)
		}
		if p.Required != (p.Name == "name") {
			t.Errorf("%s Required = %v", p.Name, p.Required)
		}
	}
	level, ok := d.Param("level")
	if !ok || strings.Join(level.Enum, ",") != "1,2,3" {
		t.Errorf("Param(level) = %+v, %v; want enum 1,2,3 read from YAML integers", level, ok)
	}
	if _, ok := d.Param("nope"); ok {
		t.Error("Param(nope) found a parameter")
	}
	if len(d.Columns) != 1 || d.Columns[0] != (Column{Name: "value", Type: TypeString}) {
		t.Errorf("columns = %+v", d.Columns)
	}
}

// Empty documents (comments only, a stray ---) are skipped but still counted, so the
// document number in messages is the one an editor shows.
func TestParseSkipsEmptyDocuments(t *testing.T) {
	data := "# header comment\n---\n# nothing here\n---\n" + sampleYAML + "---\n"
	defs, err := Parse("x.yaml", []byte(data))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(defs) != 1 {
		t.Fatalf("got %d definitions, want 1", len(defs))
	}
	if defs[0].Source != "x.yaml: document 2" {
		t.Errorf("source %q, want x.yaml: document 2", defs[0].Source)
	}
}

func TestParseNullDefaultMeansNone(t *testing.T) {
	data := mutate(t, sampleYAML, "        default: json\n", "        default: ~\n")
	defs, err := Parse("x.yaml", []byte(data))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if p, _ := defs[0].Param("format"); p.Default != nil {
		t.Errorf("default = %q, want none", *p.Default)
	}
}

// mutate replaces old with new in s and fails the test if old is not there, so that a
// case whose edit silently missed cannot pass for the wrong reason.
func mutate(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("test bug: %q not in the sample", old)
	}
	return strings.Replace(s, old, new, 1)
}

func TestParseErrors(t *testing.T) {
	const doc = "bad.yaml: document 1 (test.sample.run): "
	const props = doc + "spec.parameters.properties."
	cases := []struct {
		name     string
		old, new string // edit of sampleYAML; old "" means data is new as it stands
		want     []string
	}{
		{"malformed YAML", "", "apiVersion: [\n", []string{"bad.yaml: document 1: yaml: line "}},
		{"tab indentation", "    mode: auto\n", "\tmode: auto\n", []string{"bad.yaml: document 1: yaml: line "}},
		{"empty input", "", "", []string{"bad.yaml: no definitions"}},
		{"comments only", "", "# nothing\n---\n", []string{"bad.yaml: no definitions"}},
		{"not a mapping", "", "- a\n- b\n", []string{"bad.yaml: document 1: line 1: cannot unmarshal !!seq where a mapping is expected"}},
		{"unknown top-level field", "kind: InstructionDefinition\n", "kind: InstructionDefinition\nkinds: x\n",
			[]string{doc + `line 3: unknown field "kinds"`}},
		{"unknown spec field", "  type: question\n", "  type: question\n  tyep: action\n", []string{doc + `line 9: unknown field "tyep"`}},
		{"unknown validation field", "          minLength: 2\n", "          minLen: 2\n", []string{doc + `line 20: unknown field "minLen"`}},
		{"duplicate key", "  platforms: [linux]\n", "  platforms: [linux]\n  platforms: [darwin]\n", []string{doc + `line 10: mapping key "platforms" already defined at line 9`}},
		{"list where a mapping belongs", "  approval:\n    mode: auto\n", "  approval: [auto]\n",
			[]string{doc + "line 49: cannot unmarshal !!seq where a mapping is expected"}},
		{"wrong scalar type", "ttlSeconds: 120", "ttlSeconds: soon", []string{doc + "line ", "cannot unmarshal !!str `soon`"}},
		{"apiVersion", "yuzu.io/v1alpha1", "yuzu.io/v2", []string{doc + `apiVersion: must be yuzu.io/v1alpha1, got "yuzu.io/v2"`}},
		{"kind", "kind: InstructionDefinition", "kind: InstructionSet", []string{doc + `kind: must be InstructionDefinition, got "InstructionSet"`}},
		{"missing id", "  id: test.sample.run\n", "", []string{"bad.yaml: document 1: metadata.id: required"}},
		{"id shape", "id: test.sample.run", "id: Test.Sample", []string{`bad.yaml: document 1 (Test.Sample): metadata.id: "Test.Sample" is not lowercase dot-separated words`}},
		{"id single word", "id: test.sample.run", "id: sample", []string{`metadata.id: "sample" is not lowercase dot-separated words`}},
		{"displayName", "  displayName: Sample\n", "", []string{doc + "metadata.displayName: required"}},
		{"version", "version: 1.0.0", "version: v1", []string{doc + `metadata.version: must be a semantic version such as 0.1.0, got "v1"`}},
		{"type", "type: question", "type: query", []string{doc + `spec.type: must be question or action, got "query"`}},
		{"platform unknown", "[linux]", "[linux, freebsd]", []string{doc + `spec.platforms: unknown platform "freebsd" (allowed: windows, linux, darwin)`}},
		{"platform twice", "[linux]", "[linux, linux]", []string{doc + `spec.platforms: "linux" listed twice`}},
		{"platforms empty", "[linux]", "[]", []string{doc + "spec.platforms: must name at least one of windows, linux, darwin"}},
		{"plugin missing", "    plugin: sample\n", "", []string{doc + "spec.execution.plugin: required"}},
		{"action missing", "    action: run\n", "", []string{doc + "spec.execution.action: required"}},
		{"action shape", "action: run", "action: run now", []string{doc + `spec.execution.action: "run now" is not a valid name`}},
		{"parameters type", "    type: object\n", "    type: array\n", []string{doc + `spec.parameters.type: must be object, got "array"`}},
		{"required not declared", "required: [name]", "required: [name, nmae]", []string{doc + `spec.parameters.required: "nmae" is not in properties`}},
		{"required twice", "required: [name]", "required: [name, name]", []string{doc + `spec.parameters.required: "name" listed twice`}},
		{"parameter type", "      offset:\n        type: int64\n", "      offset:\n        type: integer\n",
			[]string{props + `offset.type: must be string, int32, int64 or bool, got "integer"`}},
		{"parameter type missing", "      offset:\n        type: int64\n", "      offset:\n        description: x\n",
			[]string{props + `offset.type: must be string, int32, int64 or bool, got ""`}},
		{"parameter name", "      offset:\n", "      off set:\n", []string{props + `off set: "off set" is not a valid parameter name`}},
		{"bad pattern", "pattern: 'ab|cd.*'", "pattern: 'ab(cd'", []string{props + "name.validation.pattern: error parsing regexp: missing closing ): `ab(cd`"}},
		{"pattern needing backreference", "pattern: 'ab|cd.*'", `pattern: '(a)\1'`, []string{props + "name.validation.pattern: error parsing regexp: invalid escape sequence: `\\1`"}},
		{"pattern on an integer", "      offset:\n        type: int64\n", "      offset:\n        type: int64\n        validation:\n          pattern: '[0-9]+'\n",
			[]string{props + "offset.validation.pattern: applies only to string parameters, not int64"}},
		{"maxLength on a bool", "        type: bool\n", "        type: bool\n        validation:\n          maxLength: 5\n",
			[]string{props + "recursive.validation.maxLength: applies only to string parameters, not bool"}},
		{"minimum on a string", "          minLength: 2\n", "          minimum: 2\n", []string{props + "name.validation.minimum: applies only to int32 and int64 parameters, not string"}},
		{"negative maxLength", "maxLength: 8", "maxLength: -1", []string{props + "name.validation.maxLength: must not be negative, got -1"}},
		{"minLength above maxLength", "minLength: 2", "minLength: 9", []string{props + "name.validation: minLength 9 is greater than maxLength 8"}},
		{"minimum above maximum", "minimum: 1", "minimum: 1001", []string{props + "limit.validation: minimum 1001 is greater than maximum 1000"}},
		{"maximum beyond int32", "maximum: 1000", "maximum: 3000000000", []string{props + "limit.validation.maximum: 3000000000 is out of range for int32"}},
		{"enum value not an int", "enum: [1, 2, 3]", "enum: [1, two]", []string{props + `level.validation.enum[1]: not a valid int32: "two"`}},
		{"enum value breaks pattern", "          pattern: 'ab|cd.*'\n", "          pattern: 'ab|cd.*'\n          enum: [ab, xy]\n",
			[]string{props + "name.validation.enum[1]: does not match pattern ab|cd.*"}},
		{"enum value twice", "enum: [json, csv]", "enum: [json, csv, json]", []string{props + `format.validation.enum[2]: "json" listed twice`}},
		{"enum empty", "enum: [json, csv]", "enum: []", []string{props + "format.validation.enum: an empty enum allows no value"}},
		{"bool enum", "        type: bool\n", "        type: bool\n        validation:\n          enum: [yes, no]\n",
			[]string{props + `recursive.validation.enum[0]: must be true or false (got "yes")`}},
		{"default not in enum", "default: json", "default: xml", []string{props + `format.default: must be one of json, csv (got "xml")`}},
		{"default not an int", "default: 10", "default: ten", []string{props + `limit.default: not a valid int32: "ten"`}},
		{"default out of range", "default: 10", "default: 0", []string{props + "limit.default: 0 is below minimum 1"}},
		{"default bool", "default: false", "default: False", []string{props + `recursive.default: must be true or false (got "False")`}},
		{"default list", "default: json", "default: [json]", []string{props + "format.default: must be a single value, not a list or map"}},
		{"columns missing", "  result:\n    columns:\n      - name: value\n        type: string\n", "", []string{doc + "spec.result.columns: must list at least one column"}},
		{"column type", "        type: string\n  gather", "        type: text\n  gather", []string{doc + `spec.result.columns[0].type: must be string, int32, int64 or bool, got "text"`}},
		{"column twice", "      - name: value\n        type: string\n", "      - name: value\n        type: string\n      - name: value\n        type: int32\n",
			[]string{doc + `spec.result.columns[1].name: column "value" listed twice`}},
		{"ttl zero", "ttlSeconds: 120", "ttlSeconds: 0", []string{doc + "spec.gather.ttlSeconds: must be greater than 0, got 0"}},
		{"ttl missing", "  gather:\n    ttlSeconds: 120\n", "", []string{doc + "spec.gather.ttlSeconds: must be greater than 0, got 0"}},
		{"approval mode", "mode: auto", "mode: manual", []string{doc + `spec.approval.mode: must be auto or role-gated, got "manual"`}},
		{"minAgentVersion", "  approval:\n", "  compatibility:\n    minAgentVersion: latest\n  approval:\n",
			[]string{doc + `spec.compatibility.minAgentVersion: must be a semantic version such as 0.1.0, got "latest"`}},
		{"requiredPlugins version", "  approval:\n", "  compatibility:\n    requiredPlugins: [sample, \"sample>=two\"]\n  approval:\n",
			[]string{doc + `spec.compatibility.requiredPlugins[1]: "sample>=two": "two" is not a semantic version such as 2.0.0`}},
		{"several problems in one document", "  type: question\n  platforms: [linux]\n", "  type: query\n  platforms: [beos]\n",
			[]string{doc + `spec.type: must be question or action`, doc + `spec.platforms: unknown platform "beos"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := c.new
			if c.old != "" {
				data = mutate(t, sampleYAML, c.old, c.new)
			}
			defs, err := Parse("bad.yaml", []byte(data))
			if err == nil {
				t.Fatalf("Parse succeeded with %d definitions; want an error", len(defs))
			}
			if defs != nil {
				t.Errorf("Parse returned %d definitions alongside its error", len(defs))
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error:\n%s\nwant it to contain:\n%s", err, w)
				}
			}
		})
	}
}

// In a stream, the message names the document that failed and its id; a type error
// in one document does not hide a problem in a later one.
func TestParseErrorsNameTheDocument(t *testing.T) {
	second := mutate(t, sampleYAML, "id: test.sample.run", "id: test.sample.other")
	cases := []struct {
		name string
		data string
		want []string
	}{
		{"duplicate id", sampleYAML + "---\n" + sampleYAML,
			[]string{"f.yaml: document 2 (test.sample.run): metadata.id: duplicate id, first defined in document 1"}},
		{"problem in the third document", sampleYAML + "---\n" + second + "---\n" + mutate(t, second, "id: test.sample.other", "id: test.sample.third\n  colour: red"),
			[]string{`f.yaml: document 3 (test.sample.third): line `, `unknown field "colour"`}},
		{"problems in two documents", mutate(t, sampleYAML, "ttlSeconds: 120", "ttlSeconds: nope") + "---\n" + mutate(t, second, "mode: auto", "mode: never"),
			[]string{"f.yaml: document 1 (test.sample.run): line ", `f.yaml: document 2 (test.sample.other): spec.approval.mode: must be auto or role-gated, got "never"`}},
		{"syntax error after a good document", sampleYAML + "---\nkind: [\n",
			[]string{"f.yaml: document 2: yaml: line "}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(c.data))
			if err == nil {
				t.Fatal("Parse succeeded; want an error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error:\n%s\nwant it to contain:\n%s", err, w)
				}
			}
		})
	}
}

func TestParseFS(t *testing.T) {
	other := mutate(t, sampleYAML, "id: test.sample.run", "id: test.sample.other")
	other = mutate(t, other, "plugin: sample", "plugin: second")
	cases := []struct {
		name string
		fsys fstest.MapFS
		dir  string
		want string // error text; "" means success
		ids  string
	}{
		{"two files", fstest.MapFS{"b.yaml": {Data: []byte(other)}, "a.yaml": {Data: []byte(sampleYAML)}, "notes.txt": {Data: []byte("x")}}, ".", "",
			"test.sample.other,test.sample.run"},
		{"id in two files", fstest.MapFS{"a.yaml": {Data: []byte(sampleYAML)}, "b.yaml": {Data: []byte(sampleYAML)}}, ".",
			"b.yaml: document 1 (test.sample.run): metadata.id: duplicate id, first defined in a.yaml: document 1", ""},
		{"one bad file", fstest.MapFS{"a.yaml": {Data: []byte(sampleYAML)}, "b.yaml": {Data: []byte("kind: [\n")}}, ".",
			"b.yaml: document 1: yaml: line", ""},
		{"no yaml", fstest.MapFS{"a.yml": {Data: []byte(sampleYAML)}}, ".", `definitions: no *.yaml files in "."`, ""},
		{"yaml name is a directory", fstest.MapFS{"a.yaml/x": {Data: []byte("x")}}, ".", "a.yaml", ""},
		// Only the directory named is read, and its files are named without it.
		{"subdirectory", fstest.MapFS{"defs/b.yaml": {Data: []byte(other)}, "defs/a.yaml": {Data: []byte(sampleYAML)}, "top.yaml": {Data: []byte("kind: [\n")}},
			"defs", "", "test.sample.other,test.sample.run"},
		{"subdirectory names files by base name", fstest.MapFS{"defs/a.yaml": {Data: []byte(sampleYAML)}, "defs/b.yaml": {Data: []byte(sampleYAML)}}, "defs",
			"b.yaml: document 1 (test.sample.run): metadata.id: duplicate id, first defined in a.yaml: document 1", ""},
		{"no yaml in the subdirectory", fstest.MapFS{"a.yaml": {Data: []byte(sampleYAML)}}, "defs", `definitions: no *.yaml files in "defs"`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defs, err := ParseFS(c.fsys, c.dir)
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "defs/") {
					t.Fatalf("ParseFS error = %v, want it to contain %q and no directory in file names", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseFS: %v", err)
			}
			cat, err := NewCatalog(defs)
			if err != nil {
				t.Fatalf("NewCatalog: %v", err)
			}
			var ids []string
			for _, d := range cat.All() {
				ids = append(ids, d.ID)
			}
			if got := strings.Join(ids, ","); got != c.ids {
				t.Errorf("All() ids = %s, want %s", got, c.ids)
			}
			if got := cat.ForPlugin("second"); len(got) != 1 || got[0].ID != "test.sample.other" {
				t.Errorf("ForPlugin(second) = %v", got)
			}
		})
	}
}
