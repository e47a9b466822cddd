package rows

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// The row rules (docs/sdk.md): every field folds CR and LF into a space; every field but the
// last escapes `|` as `\|` and turns a trailing `\` into `/`; the last field stays raw.
func TestFormat(t *testing.T) {
	cases := []struct {
		name   string
		kind   string
		fields []string
		want   string
	}{
		{"kind only", "status", nil, "status"},
		{"kind only keeps pipe raw", "a|b", nil, "a|b"},
		{"kind only folds newline", "a\nb", nil, "a b"},
		{"one field", "exists", []string{"true"}, "exists|true"},
		{"two fields", "entry", []string{"file", "a.txt"}, "entry|file|a.txt"},
		{"CR and LF in inner field", "k", []string{"a\r\nb", "c"}, "k|a  b|c"},
		{"CR and LF in last field", "k", []string{"a", "x\ry\nz"}, "k|a|x y z"},
		{"pipe in inner field", "k", []string{"a|b", "c"}, `k|a\|b|c`},
		{"pipe in last field raw", "k", []string{"a", "b|c"}, "k|a|b|c"},
		{"pipe in kind escaped", "k|x", []string{"v"}, `k\|x|v`},
		{"trailing backslash inner", "k", []string{`C:\dir\`, "v"}, `k|C:\dir/|v`},
		{"only last trailing backslash folded", "k", []string{`a\\`, "v"}, `k|a\/|v`},
		{"trailing backslash last field raw", "k", []string{"a", `C:\dir\`}, `k|a|C:\dir\`},
		{"interior backslash kept", "ace", []string{`BUILTIN\Users`, "rx"}, `ace|BUILTIN\Users|rx`},
		{"backslash before pipe", "k", []string{`a\|b`, "v"}, `k|a\\|b|v`},
		{"lone backslash inner", "k", []string{`\`, "v"}, "k|/|v"},
		{"empty fields", "k", []string{"", "", ""}, "k|||"},
		{"newline then backslash end", "k", []string{"a\\\n", "v"}, `k|a\ |v`},
		{"utf8 untouched", "k", []string{"héllo|wörld", "ünï"}, `k|héllo\|wörld|ünï`},
	}
	for _, c := range cases {
		if got := Format(c.kind, c.fields...); got != c.want {
			t.Errorf("%s: Format(%q, %q) = %q, want %q", c.name, c.kind, c.fields, got, c.want)
		}
	}
}

func TestField(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"a|b", `a\|b`},
		{"a\nb\rc", "a b c"},
		{`tail\`, "tail/"},
		{`mid\dle`, `mid\dle`},
		{`||`, `\|\|`},
	}
	for _, c := range cases {
		if got := Field(c.in); got != c.want {
			t.Errorf("Field(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestLine(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{`a|b\`, `a|b\`},
		{"a\r\nb", "a  b"},
		{"\n", " "},
	}
	for _, c := range cases {
		if got := Line(c.in); got != c.want {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSanitize(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"INPUT", "INPUT"},
		{"a|b", "a_b"},
		{"a\r\nb", "a__b"},
		{`back\slash\`, `back\slash\`},
		{"|\r\n|", "____"},
		{"zöne|x", "zöne_x"},
		{"bad\xffutf8|x", "bad\xffutf8_x"},
		{"C:\\Program Files", "C:\\Program Files"},
	}
	for _, c := range cases {
		if got := Sanitize(c.in); got != c.want {
			t.Errorf("Sanitize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// splitRow splits row into at most n parts at each `|` not preceded by a backslash: the
// reader's rule for every separator but the ones inside the raw last field.
func splitRow(row string, n int) []string {
	var parts []string
	start := 0
	for i := 0; i < len(row) && len(parts) < n-1; i++ {
		if row[i] == '|' && (i == 0 || row[i-1] != '\\') {
			parts = append(parts, row[start:i])
			start = i + 1
		}
	}
	return append(parts, row[start:])
}

// foldLine is the reference for CR/LF folding, written apart from the package's code.
func foldLine(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}

func FuzzFormat(f *testing.F) {
	f.Add("entry", "a|b", `c\`, "last|raw\n")
	f.Add("k", `\|`, "", `\`)
	f.Add("", "\r\n", "|", "|")
	f.Add(`x\`, `\\`, `a\|b\`, "")
	f.Fuzz(func(t *testing.T, kind, a, b, last string) {
		fields := []string{a, b, last}
		row := Format(kind, fields...)
		if strings.ContainsAny(row, "\r\n") {
			t.Fatalf("row %q contains CR or LF", row)
		}
		parts := splitRow(row, len(fields)+1)
		if len(parts) != len(fields)+1 {
			t.Fatalf("row %q splits into %d parts, want %d", row, len(parts), len(fields)+1)
		}
		// Inner fields come back exactly, up to the documented lossy folds.
		for i, orig := range append([]string{kind}, a, b) {
			want := foldLine(orig)
			if strings.HasSuffix(want, `\`) {
				want = want[:len(want)-1] + "/"
			}
			if got := strings.ReplaceAll(parts[i], `\|`, "|"); got != want {
				t.Fatalf("row %q field %d decodes to %q, want %q", row, i, got, want)
			}
		}
		if parts[3] != foldLine(last) {
			t.Fatalf("row %q last field %q, want %q", row, parts[3], foldLine(last))
		}
		// Without a pipe in the last field, splitting the whole row gives the count.
		if !strings.Contains(last, "|") {
			if all := splitRow(row, len(row)+2); len(all) != len(fields)+1 {
				t.Fatalf("row %q splits fully into %d parts, want %d", row, len(all), len(fields)+1)
			}
		}
	})
}

// PrintableLines keeps the line breaks and escapes everything else in each line.
func TestPrintableLines(t *testing.T) {
	if got, want := PrintableLines("one\ttab\ntwo \x1b[31m\n"), `one\x09tab`+"\n"+`two \x1b[31m`+"\n"; got != want {
		t.Errorf("PrintableLines = %q, want %q", got, want)
	}
}

func TestPrintable(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"tab\tescaped", `tab\x09escaped`},
		{"new\nline", `new\x0aline`},
		{"cr\rhere", `cr\x0dhere`},
		{"esc\x1b[2Jclear", `esc\x1b[2Jclear`},
		{"nul\x00byte", `nul\x00byte`},
		{"del\x7f", `del\x7f`},
		{"c1\u009bcsi", `c1\x9bcsi`},
		{"bad\xffutf8", "bad\uFFFDutf8"},
		{"ünïcode ✓ 日本語 e\u0301", "ünïcode ✓ 日本語 e\u0301"},
		{"", ""},
		// What reorders or breaks a line without a control byte.
		{"invoice\u202efdp.exe", `invoice\u202efdp.exe`},
		{"a\u2066b\u2069c\u200fd\u061ce", `a\u2066b\u2069c\u200fd\u061ce`},
		{"line\u2028sep\u2029para", `line\u2028sep\u2029para`},
		{"ad\u200bmin\ufeff\u00ad", `ad\u200bmin\ufeff\xad`},
		{"tag\U000e0041", `tag\U000e0041`},
	}
	for _, c := range cases {
		if got := Printable(c.in); got != c.want {
			t.Errorf("Printable(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzPrintable(f *testing.F) {
	f.Add("a\x1b[31mred\n")
	f.Add("\xff\xfe")
	f.Fuzz(func(t *testing.T, s string) {
		p := Printable(s)
		if !utf8.ValidString(p) {
			t.Fatalf("Printable(%q) = %q is not valid UTF-8", s, p)
		}
		for _, r := range p {
			if Hidden(r) {
				t.Fatalf("Printable(%q) = %q keeps control %U", s, p, r)
			}
		}
		if Printable(p) != p {
			t.Fatalf("Printable is not stable on its own output: %q", p)
		}
	})
}

// FuzzSanitize: the length never changes, no separator survives, and every byte but a
// separator is kept.
func FuzzSanitize(f *testing.F) {
	f.Add("fil|ter\r\n")
	f.Add("bad\xff|")
	f.Fuzz(func(t *testing.T, s string) {
		got := Sanitize(s)
		if len(got) != len(s) || strings.ContainsAny(got, "|\r\n") {
			t.Fatalf("Sanitize(%q) = %q", s, got)
		}
		for i := 0; i < len(s); i++ {
			if got[i] != s[i] && got[i] != '_' {
				t.Fatalf("byte %d changed: %q -> %q", i, s, got)
			}
		}
	})
}

func TestSplit(t *testing.T) {
	cases := []struct {
		row  string
		n    int
		want []string
	}{
		{"status", 1, []string{"status"}},
		{"status", 3, []string{"status"}},
		{"a|b", 1, []string{"a|b"}},
		{"entry|file|a.txt", 3, []string{"entry", "file", "a.txt"}},
		{"k|a|b|c", 3, []string{"k", "a", "b|c"}},
		{`k|a\|b|c`, 3, []string{"k", "a|b", "c"}},
		{`k|a\\|b|v`, 3, []string{"k", `a\|b`, "v"}},
		{`k|a|C:\dir\`, 3, []string{"k", "a", `C:\dir\`}},
		{`k|a|x\|y`, 3, []string{"k", "a", `x\|y`}},
		{"k|||", 4, []string{"k", "", "", ""}},
		{"k|||", 0, []string{"k", "", "", ""}},
		{`k|a\|b|c|d`, 0, []string{"k", "a|b", "c", "d"}},
		{"", 2, []string{""}},
		{"bad|\xff|x", 0, []string{"bad", "\xff", "x"}},
	}
	for _, c := range cases {
		if got := Split(c.row, c.n); !slices.Equal(got, c.want) {
			t.Errorf("Split(%q, %d) = %q, want %q", c.row, c.n, got, c.want)
		}
	}
}

// FuzzSplitFormat: Split reads back what Format wrote, for fields Format keeps as they
// are (no CR or LF, no trailing backslash in an inner field).
func FuzzSplitFormat(f *testing.F) {
	f.Add("k", "a|b", `c\|d`, "e|f")
	f.Add(`\`, `x\`, "|", "")
	f.Fuzz(func(t *testing.T, kind, a, b, last string) {
		fields := []string{kind, a, b, last}
		for i, s := range fields {
			s = strings.NewReplacer("\r", "", "\n", "").Replace(s)
			if i < len(fields)-1 {
				s = strings.TrimRight(s, `\`)
			}
			fields[i] = s
		}
		row := Format(fields[0], fields[1:]...)
		if got := Split(row, len(fields)); !slices.Equal(got, fields) {
			t.Fatalf("Split(Format(%q)) = %q (row %q)", fields, got, row)
		}
	})
}
