package sdk

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// A declaration that contradicts itself panics at registration, naming the problem.
func TestBrokenDeclarationsPanic(t *testing.T) {
	cases := []struct {
		name string
		opt  ActionOption
		want string
	}{
		{"unknown type", Param("x", Type("float"), ""), `parameter x: type: must be string, int32, int64 or bool, got "float"`},
		{"empty name", Param("", TypeString, ""), "parameter with an empty name"},
		{"pattern on an int", Param("x", TypeInt32, "", Pattern("[0-9]+")), "parameter x: pattern: applies only to string parameters, not int32"},
		{"maxLength on a bool", Param("x", TypeBool, "", MaxLength(5)), "parameter x: maxLength: applies only to string parameters, not bool"},
		{"minimum on a string", Param("x", TypeString, "", Minimum(1)), "parameter x: minimum: applies only to int32 and int64 parameters, not string"},
		{"clamped string", Param("x", TypeString, "", Clamped()), "parameter x: clamped: applies only to int32 and int64 parameters, not string"},
		{"bad pattern", Param("x", TypeString, "", Pattern("(")), "parameter x: pattern: error parsing regexp: missing closing ): `(`"},
		{"min over max", Param("x", TypeInt32, "", Minimum(5), Maximum(1)), "parameter x: minimum 5 is greater than maximum 1"},
		{"minLength over maxLength", Param("x", TypeString, "", MinLength(5), MaxLength(1)), "parameter x: minLength 5 is greater than maxLength 1"},
		{"negative length", Param("x", TypeString, "", MaxLength(-1)), "parameter x: maxLength: must not be negative, got -1"},
		{"bound out of int32", Param("x", TypeInt32, "", Maximum(1<<40)), "parameter x: maximum: 1099511627776 is out of range for int32"},
		{"default breaks a rule", Param("x", TypeInt32, "", Default("0"), Minimum(1)), "parameter x: default: 0 is below minimum 1"},
		{"enum value breaks a rule", Param("x", TypeString, "", MaxLength(2), Enum("abc")), "parameter x: enum[0]: exceeds maxLength 2 (3 bytes)"},
		{"enum value twice", Param("x", TypeString, "", Enum("a", "b", "a")), `parameter x: enum[2]: "a" listed twice`},
		{"empty enum", Param("x", TypeString, "", Enum()), "parameter x: enum: an empty enum allows no value"},
		{"message for no rule", Param("x", TypeString, "", Message("size", "t")), `parameter x: messages: unknown rule "size"`},
		{"bad column type", Row("r", "n:float"), "name or name:type"},
		{"empty row kind", Row(""), "empty or declared twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				v := recover()
				if v == nil || !strings.Contains(v.(string), c.want) {
					t.Errorf("panic %v, want one containing %q", v, c.want)
				}
			}()
			New("p", "1", "").Handle("a", nop, c.opt)
		})
	}
	defer func() {
		if v := recover(); v == nil || !strings.Contains(v.(string), "declared twice") {
			t.Errorf("a parameter declared twice: panic %v", v)
		}
	}()
	New("p", "1", "").Handle("a", nop, Param("x", TypeString, ""), Param("x", TypeString, ""))
}

// Compile reports every problem, keyed by the field a definition would name, and
// leaves the enum values and the default alone until the rules they are checked
// against are sound.
func TestCompileListsEveryProblem(t *testing.T) {
	five, one := 5, 1
	var minimum int64 = 1
	def := "q"
	p := Parameter{Name: "x", Type: TypeString, MinLength: &five, MaxLength: &one, Pattern: "(",
		Minimum: &minimum, Clamped: true, Messages: map[Rule]string{"size": "t", RuleEnum: "t"},
		Enum: []string{"zz"}, Default: &def}
	want := []ParamProblem{
		{"", "minLength 5 is greater than maxLength 1"},
		{"pattern", "error parsing regexp: missing closing ): `(`"},
		{"minimum", "applies only to int32 and int64 parameters, not string"},
		{"clamped", "applies only to int32 and int64 parameters, not string"},
		{"messages", `unknown rule "size"`},
	}
	if got := p.Compile(); !slices.Equal(got, want) {
		t.Errorf("Compile() =\n%q\nwant\n%q", got, want)
	}

	def = "7"
	p = Parameter{Name: "x", Type: TypeInt32, Minimum: &minimum, Enum: []string{"1", "0", "1"}, Default: &def}
	want = []ParamProblem{
		{"enum[1]", "0 is below minimum 1"},
		{"enum[2]", `"1" listed twice`},
		{"default", `must be one of 1, 0, 1 (got "7")`},
	}
	if got := p.Compile(); !slices.Equal(got, want) {
		t.Errorf("Compile() =\n%q\nwant\n%q", got, want)
	}
	if got := (ParamProblem{"enum[1]", "x"}).String() + "|" + (ParamProblem{"", "y"}).String(); got != "enum[1]: x|y" {
		t.Errorf("String() = %q", got)
	}

	p = Parameter{Name: "x", Type: TypeBool, Default: &def}
	if got := p.Compile(); !slices.Equal(got, []ParamProblem{{"default", `must be true or false (got "7")`}}) {
		t.Errorf("Compile() of a bool with default 7 = %q", got)
	}
}

// A compiled pattern is kept for Check, and dropped as soon as Pattern no longer says
// what it was compiled from.
func TestCompiledPatternFollowsPattern(t *testing.T) {
	p := Parameter{Name: "x", Type: TypeString, Pattern: "a+"}
	if problems := p.Compile(); problems != nil || p.re == nil || p.reFor != "a+" {
		t.Fatalf("Compile() = %q, re %v for %q; want no problem and a+ compiled", problems, p.re, p.reFor)
	}
	if rule, _ := p.Check("aa"); rule != "" {
		t.Errorf("Check(aa) against a+ = %q", rule)
	}
	if rule, problem := p.Check("aab"); rule != RulePattern || problem != "does not match pattern a+" {
		t.Errorf("Check(aab) against a+ = %q, %q; the pattern must match the whole value", rule, problem)
	}
	p.Pattern = "b+"
	if rule, _ := p.Check("bb"); rule != "" {
		t.Errorf("Check(bb) after Pattern became b+ = %q; the old expression was used", rule)
	}
	p.Pattern = "("
	if problems := p.Compile(); len(problems) != 1 || p.re != nil {
		t.Errorf("Compile() of ( = %q, re %v; want one problem and no regexp kept", problems, p.re)
	}
}

func TestColumnsFollowRowsUnlessSet(t *testing.T) {
	p := New("p", "1", "")
	p.Handle("a", nop, Row("match", "path", "size:int64"), Row("total", "count:int32"))
	p.Handle("b", nop, Row("match", "path", "size:int64"), Columns("row_kind", "path", "size:int64"))
	acts := p.Actions()
	want := []Column{{"path", TypeString}, {"size", TypeInt64}, {"count", TypeInt32}}
	if len(acts[0].Columns) != 3 || acts[0].Columns[0] != want[0] || acts[0].Columns[1] != want[1] || acts[0].Columns[2] != want[2] {
		t.Errorf("derived columns %+v", acts[0].Columns)
	}
	if len(acts[1].Columns) != 3 || acts[1].Columns[0].Name != "row_kind" {
		t.Errorf("explicit columns %+v", acts[1].Columns)
	}
}

func TestCheckParamsOrderAndMessages(t *testing.T) {
	p := New("p", "1", "")
	p.Handle("a", nop,
		Param("first", TypeString, "", Required(), Message(RuleRequired, "missing required parameters: first, second")),
		Param("second", TypeInt64, "", Required(), Minimum(0), Message(RuleMinimum, "{name} must not be negative, got {value}")),
	)
	decl := p.Actions()[0].Params
	cases := []struct {
		params map[string]string
		want   string
	}{
		{map[string]string{"first": "x", "second": "0"}, ""},
		{map[string]string{"second": "-1"}, "missing required parameters: first, second"}, // first wins: declaration order
		{map[string]string{"first": "x", "second": "-1"}, "second must not be negative, got -1"},
		{map[string]string{"first": "x", "second": "1e3"}, `parameter second: not a valid int64: "1e3"`},
		{map[string]string{"first": "x", "second": "9223372036854775808"}, `parameter second: "9223372036854775808" is out of range for int64`},
		{map[string]string{"first": "x", "second": "1", "other": "anything"}, ""},
	}
	for _, c := range cases {
		got := ""
		if err := CheckParams(decl, c.params); err != nil {
			got = err.Error()
			var pe *ParamError
			if !errors.As(err, &pe) || pe.Rule == "" || (pe.Param != "first" && pe.Param != "second") {
				t.Errorf("CheckParams(%v) = %#v, want a *ParamError naming the parameter and rule", c.params, err)
			}
		}
		if got != c.want {
			t.Errorf("CheckParams(%v) = %q, want %q", c.params, got, c.want)
		}
	}
}

// BenchmarkCheckParams measures the check the SDK runs before every handler, on a
// declaration as rich as the filesystem plugin's search action (a path, a pattern with
// a length bound, two enums and a bounded integer), with every parameter present.
func BenchmarkCheckParams(b *testing.B) {
	p := New("p", "1", "")
	p.Handle("search", nop,
		Param("path", TypeString, "", Required(), MaxLength(4096)),
		Param("pattern", TypeString, "", Required(), MaxLength(256)),
		Param("regex", TypeString, "", Enum("true", "false")),
		Param("case_sensitive", TypeString, "", Enum("true", "false")),
		Param("max_matches", TypeInt32, "", Minimum(1), Maximum(10000), Clamped()),
		Param("key", TypeString, "", Pattern(`^[a-zA-Z0-9_.:\-]+$`), MaxLength(64)),
		Param("base_dir", TypeString, "", MaxLength(4096)),
	)
	decl := p.Actions()[0].Params
	m := map[string]string{"path": "/var/log/syslog", "pattern": "error", "regex": "false",
		"case_sensitive": "true", "max_matches": "100", "key": "env.prod", "base_dir": "/var/log"}
	b.ReportAllocs()
	for b.Loop() {
		if err := CheckParams(decl, m); err != nil {
			b.Fatal(err)
		}
	}
}
