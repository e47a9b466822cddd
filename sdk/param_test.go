package sdk

import (
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
		{"unknown type", Param("x", Type("float"), ""), `type "float"`},
		{"pattern on an int", Param("x", TypeInt32, "", Pattern("[0-9]+")), "apply only to strings"},
		{"minimum on a string", Param("x", TypeString, "", Minimum(1)), "apply only to integers"},
		{"clamped string", Param("x", TypeString, "", Clamped()), "apply only to integers"},
		{"bad pattern", Param("x", TypeString, "", Pattern("(")), "pattern"},
		{"min over max", Param("x", TypeInt32, "", Minimum(5), Maximum(1)), "greater than maximum"},
		{"minLength over maxLength", Param("x", TypeString, "", MinLength(5), MaxLength(1)), "greater than maxLength"},
		{"bound out of int32", Param("x", TypeInt32, "", Maximum(1<<40)), "out of range for int32"},
		{"default breaks a rule", Param("x", TypeInt32, "", Default("0"), Minimum(1)), `default "0"`},
		{"enum value breaks a rule", Param("x", TypeString, "", MaxLength(2), Enum("abc")), `enum value "abc"`},
		{"empty enum", Param("x", TypeString, "", Enum()), "empty enum"},
		{"message for no rule", Param("x", TypeString, "", Message("size", "t")), `unknown rule "size"`},
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
		if got := checkParams(decl, c.params); got != c.want {
			t.Errorf("checkParams(%v) = %q, want %q", c.params, got, c.want)
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
		if msg := checkParams(decl, m); msg != "" {
			b.Fatal(msg)
		}
	}
}
