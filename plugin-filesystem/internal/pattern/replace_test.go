package pattern

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"
)

// ecmaReplaceTests were checked against String.prototype.replace with a global
// regular expression in a JavaScript engine.
var ecmaReplaceTests = []struct {
	src, pattern, repl, want string
	count                    int
}{
	{"aaa", "a*", "-", "--", 2}, // empty match right after a non-empty one counts
	{"abc", "x*", "-", "-a-b-c-", 4},
	{"abc", "b", "$`", "aac", 1},
	{"abc", "b", "$'", "acc", 1},
	{"abc", "b", "[$&]", "a[b]c", 1},
	{"abc", "(b)", "$10", "ab0c", 1}, // group 1, then a literal 0
	{"abc", "(b)", "$2", "a$2c", 1},  // no group 2: literal
	{"abc", "(b)", "$01", "abc", 1},
	{"abc", "(b)", "$00", "a$00c", 1},
	{"abc", "(b)", "$0", "a$0c", 1},
	{"abc", "(b)", "$05", "a$05c", 1},
	{"abc", "(b)", "$$1", "a$1c", 1},
	{"abc", "(b)|(x)", "[$2]", "a[]c", 1}, // group that did not take part is empty
	{"abc", "b", "$", "a$c", 1},
	{"abc", "b", "$<n>", "a$<n>c", 1},
	{"abc", "b", "$$", "a$c", 1},
	{"abc", "(b)", "$%", "a$%c", 1},
	{"abc", "(b)", "x$1y$1z", "axbybzc", 1},
	{"abcdefghijk", "(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)", "$11|$111|$1$01|$12", "k|k1|aa|a2", 1},
	{"hello world", `(\w+) (\w+)`, "$2 $1", "world hello", 1},
	{"a.b.c", `\.`, "$$", "a$b$c", 2},
	{"", "x*", "-", "-", 1},
	{"ab", "", "-", "-a-b-", 3},
	{"aaa", "a*?", "-", "-a-a-a-", 4},
	{"a\nb", "^", "-", "-a\nb", 1}, // ^ is the start of the text only
	{"a b", `\b`, "|", "|a| |b|", 4},
	{"foo  ", `\s*$`, "X", "fooXX", 2},
	{"aXbX", "X", "$'", "abXb", 2},
	{"x", "x", "$'$`$&", "x", 1},
}

func TestReplaceAllECMAScript(t *testing.T) {
	for _, tc := range ecmaReplaceTests {
		re, err := Compile(tc.pattern, false)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tc.pattern, err)
		}
		got, n, err := ReplaceAll(re, []byte(tc.src), tc.repl, DefaultMaxOutput)
		if err != nil {
			t.Errorf("ReplaceAll(%q, %q, %q): %v", tc.src, tc.pattern, tc.repl, err)
			continue
		}
		if string(got) != tc.want || n != tc.count {
			t.Errorf("ReplaceAll(%q, /%s/, %q) = %q, %d; want %q, %d", tc.src, tc.pattern, tc.repl, got, n, tc.want, tc.count)
		}
	}
}

func TestReplaceAllWholeContent(t *testing.T) {
	tests := []struct {
		name, src, pattern, repl, want string
		count                          int
		fold                           bool
	}{
		{"dot keeps CRLF intact", "a=1\r\nb=2\r\n", `(\w)=.*`, "$1=x", "a=x\r\nb=x\r\n", 2, false},
		{"dollar is end of content", "x\nx\n", `x$`, "y", "x\nx\n", 0, false},
		{"caret is start of content", "x\nx\n", `^x`, "y", "y\nx\n", 1, false},
		{"case-insensitive", "Foo FOO foo", "foo", "bar", "bar bar bar", 3, true},
		{"word boundary mid-text", "cat concat cat", `\bcat\b`, "dog", "dog concat dog", 2, false},
		{"non-word boundary", "cat concat", `\Bcat`, "X", "cat conX", 1, false},
		{"multiline flag from RE2 syntax", "a\nb", `(?m)^`, ">", ">a\n>b", 2, false},
		{"utf-8 empty matches step by character", "é", "x*", "-", "-é-", 2, false},
		{"no match returns input", "abc", "z", "-", "abc", 0, false},
	}
	for _, tc := range tests {
		re, err := Compile(tc.pattern, tc.fold)
		if err != nil {
			t.Fatalf("%s: Compile: %v", tc.name, err)
		}
		got, n, err := ReplaceAll(re, []byte(tc.src), tc.repl, DefaultMaxOutput)
		if err != nil || string(got) != tc.want || n != tc.count {
			t.Errorf("%s: got %q, %d, %v; want %q, %d", tc.name, got, n, err, tc.want, tc.count)
		}
	}
}

func TestReplaceFirst(t *testing.T) {
	tests := []struct {
		src, pattern, repl string
		n                  int
		want               string
		count              int
	}{
		{"a1 a2 a3", `a(\d)`, "<$1>", 2, "<$1> <$1> a3", 2}, // literal: no expansion
		{"a1 a2 a3", `a(\d)`, "x", 5, "x x x", 3},
		{"aaa", "a*", "-", 2, "--", 2},
		{"aaa", "a*", "-", 1, "-", 1},
		{"abc", "z", "-", 1, "abc", 0},
		{"a1 a2", `a\d`, "$&", 0, "$& $&", 2}, // n <= 0: all, still literal
	}
	for _, tc := range tests {
		re := mustCompile(t, tc.pattern)
		got, count, err := ReplaceFirst(re, []byte(tc.src), tc.repl, tc.n, DefaultMaxOutput)
		if err != nil || string(got) != tc.want || count != tc.count {
			t.Errorf("ReplaceFirst(%q, /%s/, %q, %d) = %q, %d, %v; want %q, %d",
				tc.src, tc.pattern, tc.repl, tc.n, got, count, err, tc.want, tc.count)
		}
	}
}

func TestReplaceLiteral(t *testing.T) {
	tests := []struct {
		src, search, repl string
		fold              bool
		n                 int
		want              string
		count             int
	}{
		{"yuzu-capture\nyuzu-capture written", "yuzu-capture", "", false, 0, "\n written", 2},
		{"aaaa", "aa", "b", false, 0, "bb", 2}, // non-overlapping, left to right
		{"aaa", "aa", "b", false, 0, "ba", 1},
		{"a.b.c", ".", "$1", false, 0, "a$1b$1c", 2}, // no expansion in literal mode
		{"Hello HELLO hello", "hello", "x", true, 0, "x x x", 3},
		{"Hello HELLO hello", "hello", "x", false, 0, "Hello HELLO x", 1},
		{"one one one", "one", "1", false, 2, "1 1 one", 2},
		{"one one one", "one", "1", false, -1, "1 1 1", 3},
		{"ÉCOLE école", "école", "x", true, 0, "ÉCOLE x", 1}, // only ASCII folds
		{"abc", "", "x", false, 0, "abc", 0},
		{"abc", "zz", "x", false, 0, "abc", 0},
		{"xAbAB", "ab", "-", true, 0, "x--", 2},
	}
	for _, tc := range tests {
		got, count, err := ReplaceLiteral([]byte(tc.src), tc.search, tc.repl, tc.fold, tc.n, DefaultMaxOutput)
		if err != nil || string(got) != tc.want || count != tc.count {
			t.Errorf("ReplaceLiteral(%q, %q, %q, fold=%v, n=%d) = %q, %d, %v; want %q, %d",
				tc.src, tc.search, tc.repl, tc.fold, tc.n, got, count, err, tc.want, tc.count)
		}
	}
}

func TestReplaceOutputCap(t *testing.T) {
	src := []byte(strings.Repeat("x", 1000))
	re := mustCompile(t, "x")
	// "$'" makes the output quadratic: about 500 KB here, refused at 100 KB.
	if _, _, err := ReplaceAll(re, src, "$'", 100_000); !errors.Is(err, ErrOutputTooLarge) {
		t.Errorf("ReplaceAll with quadratic output: err = %v, want ErrOutputTooLarge", err)
	}
	if out, n, err := ReplaceAll(re, src, "yy", 2000); err != nil || len(out) != 2000 || n != 1000 {
		t.Errorf("ReplaceAll exactly at the cap: len %d, n %d, err %v", len(out), n, err)
	}
	if _, _, err := ReplaceAll(re, src, "yy", 1999); !errors.Is(err, ErrOutputTooLarge) {
		t.Errorf("ReplaceAll one byte over the cap: err = %v", err)
	}
	if _, _, err := ReplaceFirst(re, src, strings.Repeat("z", 200), 0, 10_000); !errors.Is(err, ErrOutputTooLarge) {
		t.Errorf("ReplaceFirst over the cap: err = %v", err)
	}
	if _, _, err := ReplaceLiteral(src, "x", "zz", false, 0, 1500); !errors.Is(err, ErrOutputTooLarge) {
		t.Errorf("ReplaceLiteral over the cap: err = %v", err)
	}
}

func TestParseTemplate(t *testing.T) {
	tests := []struct {
		repl   string
		groups int
		want   template
	}{
		{"plain", 0, template{{kind: pieceText, text: "plain"}}},
		{"", 3, nil},
		{"$1$2", 2, template{{kind: pieceGroup, group: 1}, {kind: pieceGroup, group: 2}}},
		{"$12", 12, template{{kind: pieceGroup, group: 12}}},
		{"$12", 1, template{{kind: pieceGroup, group: 1}, {kind: pieceText, text: "2"}}},
		{"$99", 99, template{{kind: pieceGroup, group: 99}}},
		{"a$$b", 0, template{{kind: pieceText, text: "a$b"}}},
		{"$x$", 0, template{{kind: pieceText, text: "$x$"}}},
		{"$&$`$'", 0, template{{kind: pieceMatch}, {kind: pieceBefore}, {kind: pieceAfter}}},
	}
	for _, tc := range tests {
		got := parseTemplate(tc.repl, tc.groups)
		if len(got) != len(tc.want) {
			t.Errorf("parseTemplate(%q, %d) = %+v, want %+v", tc.repl, tc.groups, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("parseTemplate(%q, %d) = %+v, want %+v", tc.repl, tc.groups, got, tc.want)
				break
			}
		}
	}
}

func FuzzExpand(f *testing.F) {
	f.Add("abcabc", "(b)(c)?", "[$1|$2|$&|$`|$'|$$|$10|$01|$]")
	f.Add("aaa", "a*", "-")
	f.Add("héllo", `\b|l+`, "$0$99$<x>")
	f.Fuzz(func(t *testing.T, src, pat, repl string) {
		re, err := Compile(pat, false)
		if err != nil || len(src) > 256 || len(repl) > 64 {
			return
		}
		out, n, err := ReplaceAll(re, []byte(src), repl, 1<<20)
		if err != nil {
			if !errors.Is(err, ErrOutputTooLarge) {
				t.Fatalf("ReplaceAll: %v", err)
			}
			return
		}
		if n == 0 && string(out) != src {
			t.Fatalf("no match but output %q differs from %q", out, src)
		}
		// One expansion against a synthetic match: a template without '$' expands
		// to itself.
		m := re.FindSubmatchIndex([]byte(src))
		if m == nil {
			return
		}
		exp := parseTemplate(repl, re.NumSubexp()).expand(nil, []byte(src), m)
		if !strings.Contains(repl, "$") && string(exp) != repl {
			t.Fatalf("template %q without '$' expanded to %q", repl, exp)
		}
		// With no '$' in the template, regex replace equals Go's literal replace
		// except for the empty-match rule; check it where that rule cannot differ:
		// when no match is empty, both walk the same matches.
		if !strings.Contains(repl, "$") && !hasEmptyMatch(t, re, src) {
			want := re.ReplaceAllLiteral([]byte(src), []byte(repl))
			if !bytes.Equal(out, want) {
				t.Fatalf("ReplaceAll(%q, /%s/, %q) = %q, Go's literal replace gives %q", src, pat, repl, out, want)
			}
		}
	})
}

func mustCompile(t *testing.T, p string) *regexp.Regexp {
	t.Helper()
	re, err := Compile(p, false)
	if err != nil {
		t.Fatalf("Compile(%q): %v", p, err)
	}
	return re
}

func hasEmptyMatch(t *testing.T, re *regexp.Regexp, src string) bool {
	it, err := newMatchIter(re, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for m := it.next(); m != nil; m = it.next() {
		if m[0] == m[1] {
			return true
		}
	}
	return false
}
