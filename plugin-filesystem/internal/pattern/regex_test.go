package pattern

import (
	"errors"
	"reflect"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"
)

func TestCompileECMAScriptMeaning(t *testing.T) {
	tests := []struct {
		pattern string
		fold    bool
		input   string
		want    bool
	}{
		{"a.b", false, "axb", true},
		{"a.b", false, "a\x00b", true},
		{"a.b", false, "a\rb", false}, // '.' excludes all ECMAScript line terminators
		{"a.b", false, "a\nb", false},
		{"a.b", false, "a\u2028b", false},
		{"a.b", false, "a\u2029b", false},
		{"a.b", false, "a\u2027b", true},
		{"a.b", false, "a\xffb", true}, // a malformed byte is one character
		{"a.b", false, "aéb", true},
		{"(?s)a.b", false, "a\rb", true}, // RE2's s flag still means "anything"
		{"a[^x]b", false, "a\rb", true},  // negated classes match terminators, as in ECMAScript
		{`\u0041`, false, "A", true},
		{`\u00e9`, false, "é", true},
		{`[\u0061-\u0063]+`, false, "abc", true},
		{`\\u0041`, false, `\u0041`, true}, // escaped backslash, then literal u0041
		{`\\u0041`, false, "A", false},
		{`x$`, false, "x\n", false}, // '$' is the end of the text only
		{`^x`, false, "\nx", false},
		{"hello", true, "HeLLo", true},
		{"h.llo", true, "HELLO", true},
		{"h.llo", true, "H\rLLO", false},
		{"hello", false, "HELLO", false},
		{"[a-c]+", true, "ABC", true},
	}
	for _, tc := range tests {
		re, err := Compile(tc.pattern, tc.fold)
		if err != nil {
			t.Errorf("Compile(%q, %v): %v", tc.pattern, tc.fold, err)
			continue
		}
		if got := re.MatchString(tc.input); got != tc.want {
			t.Errorf("Compile(%q, %v).MatchString(%q) = %v, want %v", tc.pattern, tc.fold, tc.input, got, tc.want)
		}
	}
}

func TestCompileKeepsGroups(t *testing.T) {
	re, err := Compile(`(?P<key>\w+)=(.*)`, true)
	if err != nil {
		t.Fatal(err)
	}
	if re.NumSubexp() != 2 || re.SubexpNames()[1] != "key" {
		t.Errorf("groups after rewrite: %d %q", re.NumSubexp(), re.SubexpNames())
	}
	m := re.FindStringSubmatch("Name=value\r")
	if m == nil || m[1] != "Name" || m[2] != "value" {
		t.Errorf("submatches = %q", m)
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		pattern, want string
	}{
		{`(a)\1`, "invalid escape sequence: `\\1`"}, // backreference
		{`(?=a)b`, "invalid or unsupported Perl syntax: `(?=`"},
		{`(?!a)b`, "invalid or unsupported Perl syntax: `(?!`"},
		{`(?<=a)b`, "invalid named capture: `(?<=a)b`"}, // RE2 reads (?< as a named group
		{`(abc`, "missing closing ): `(abc`"},
		{`a**`, "invalid nested repetition operator: `**`"},
		{`[z-a]`, "invalid character class range: `z-a`"},
		{`x{1001}`, "invalid repeat count: `{1001}`"},
	}
	for _, tc := range tests {
		for _, fold := range []bool{false, true} {
			_, err := Compile(tc.pattern, fold)
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Errorf("Compile(%q, %v) error = %v, want a CompileError", tc.pattern, fold, err)
				continue
			}
			if err.Error() != tc.want {
				t.Errorf("Compile(%q, %v) error = %q, want %q", tc.pattern, fold, err.Error(), tc.want)
			}
			var se *syntax.Error
			if !errors.As(err, &se) {
				t.Errorf("Compile(%q) error does not unwrap to *syntax.Error", tc.pattern)
			}
		}
		if _, err := CompileName(tc.pattern); err == nil || err.Error() != tc.want {
			t.Errorf("CompileName(%q) error = %v, want %q", tc.pattern, err, tc.want)
		}
	}
}

func TestCompileName(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"hosts", "hosts", true},
		{"hosts", "hosts.bak", false}, // whole name
		{"hosts", "etc_hosts", false},
		{"hosts", "HOSTS", false}, // case-sensitive
		{"a|ab", "ab", true},      // alternation inside the anchors
		{"ab|a", "a", true},
		{`.*\.conf`, "nginx.conf", true},
		{`.*\.conf`, "nginx.conf.d", false},
		{"x.y", "x\ry", false},
		{"", "", true},
		{"", "a", false},
		{"^a$", "a", true},
	}
	for _, tc := range tests {
		re, err := CompileName(tc.pattern)
		if err != nil {
			t.Fatalf("CompileName(%q): %v", tc.pattern, err)
		}
		if got := re.MatchString(tc.name); got != tc.want {
			t.Errorf("CompileName(%q).MatchString(%q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

func TestRequiredLiteral(t *testing.T) {
	tests := []struct {
		pattern string
		fold    bool // compile case-insensitively
		lit     string
		litFold bool
		ok      bool
	}{
		{"foo", false, "foo", false, true},
		{"a+foo(bar)+", false, "foo", false, true},
		{"x*abc", false, "abc", false, true},
		{"[ab]cd", false, "cd", false, true},
		{"a{2,}bcd", false, "bcd", false, true},
		{"(abcd)+x", false, "abcd", false, true},
		{"(?:abcd){2}", false, "abcd", false, true},
		{"foo|bar", false, "", false, false},
		{"(abc)?", false, "", false, false},
		{"(abc)*d", false, "d", false, true},
		{`\d+`, false, "", false, false},
		{"hello", true, "hello", true, true},
		{"HELLO world", true, "hello world", true, true},
		{"kelvin", true, "", false, false}, // 'k' also matches U+212A
		{"(?i:ab)CD", false, "CD", false, true},
		{"\ufffdabc", false, "", false, false},
		{"é+tait", false, "tait", false, true},
		{"étaient", false, "étaient", false, true},
	}
	for _, tc := range tests {
		re, err := Compile(tc.pattern, tc.fold)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tc.pattern, err)
		}
		lit, fold, ok := requiredLiteral(re)
		if ok != tc.ok || string(lit) != tc.lit || fold != tc.litFold {
			t.Errorf("requiredLiteral(%q, fold=%v) = %q, %v, %v; want %q, %v, %v",
				tc.pattern, tc.fold, lit, fold, ok, tc.lit, tc.litFold, tc.ok)
		}
	}
}

// FuzzCompile checks the rewrite against Go's own reading of the same pattern: on text
// without \r, U+2028 or U+2029 (the only characters whose meaning the rewrite
// changes) both must find exactly the same matches and groups.
func FuzzCompile(f *testing.F) {
	for _, s := range [][2]string{
		{"a.b", "axb a\nb"}, {`(\w+)=(.*)`, "k=v\nx=y"}, {`(?i)h.llo`, "HELLO"},
		{`\u0041.`, "AB"}, {`(a|.)*?b`, "aaxb"}, {`[^.]+\.`, "a.b."}, {`.`, "\xff\xfe"},
	} {
		f.Add(s[0], s[1], false)
	}
	f.Fuzz(func(t *testing.T, pattern, input string, fold bool) {
		if len(pattern) > MaxPatternLen || strings.ContainsAny(input, "\r\u2028\u2029") {
			return
		}
		re, err := Compile(pattern, fold)
		if err != nil {
			return
		}
		plain := translateEscapes(pattern)
		if fold {
			plain = "(?i)" + plain
		}
		ref, err := regexp.Compile(plain)
		if err != nil {
			t.Fatalf("Compile accepted %q but Go rejects %q: %v", pattern, plain, err)
		}
		got := re.FindAllStringSubmatchIndex(input, -1)
		want := ref.FindAllStringSubmatchIndex(input, -1)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("pattern %q on %q: rewrite finds %v, Go finds %v", pattern, input, got, want)
		}
		if fold {
			return // CompileName is always case-sensitive
		}
		if name, err := CompileName(pattern); err != nil {
			t.Fatalf("CompileName(%q): %v", pattern, err)
		} else if name.MatchString(input) != fullMatch(ref, input) {
			t.Fatalf("CompileName(%q).MatchString(%q) disagrees with a whole-text match", pattern, input)
		}
	})
}

// fullMatch reports whether some match of ref covers all of s.
func fullMatch(ref *regexp.Regexp, s string) bool {
	whole := regexp.MustCompile(`\A(?:` + ref.String() + `)\z`)
	return whole.MatchString(s)
}
