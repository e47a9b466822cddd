package pattern

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"
	"unicode/utf8"
)

// dfaFor returns a fresh DFA for pattern (RE2 syntax, as regexp.Compile reads it).
func dfaFor(t testing.TB, pattern string) (*regexp.Regexp, *dfa) {
	t.Helper()
	re := regexp.MustCompile(pattern)
	p := newDFAProg(re)
	if p == nil {
		t.Fatalf("no DFA program for %q", pattern)
	}
	return re, p.newDFA()
}

// checkDFA compares every answer the DFA gives about text with Go's regexp: whether
// it matches (as bytes, as a string, as a stream), and from every position where Go
// reads a rune (the only places the replace iterator starts) whether a match follows.
func checkDFA(t testing.TB, re *regexp.Regexp, d *dfa, text []byte) {
	t.Helper()
	want := re.Match(text)
	if got, ok := dfaMatch(d, text); ok && got != want {
		t.Fatalf("%q on %q: DFA says %v, regexp %v", re, text, got, want)
	}
	if got, ok := dfaMatch(d, string(text)); ok && got != want {
		t.Fatalf("%q on string %q: DFA says %v, regexp %v", re, text, got, want)
	}
	rest := text
	next := func() (byte, bool) {
		if len(rest) == 0 {
			return 0, false
		}
		b := rest[0]
		rest = rest[1:]
		return b, true
	}
	if got := d.matchStream(next); got != want {
		t.Fatalf("%q on stream %q: DFA says %v, regexp %v", re, text, got, want)
	}
	it, err := newMatchIter(re, text)
	if err != nil {
		t.Fatal(err)
	}
	starts := runeStarts(text)
	if len(starts) > 48 {
		// Every start costs a scan to the end: keep the check linear on long texts.
		starts = append(starts[:40], starts[len(starts)-8:]...)
	}
	for _, pos := range starts {
		at, ok := d.scanFrom(text, pos)
		if !ok {
			continue
		}
		m := it.findGo(pos)
		if (at >= 0) != (m != nil) {
			t.Fatalf("%q on %q from %d: DFA says a match ends by %d, regexp finds %v", re, text, pos, at, m)
		}
		// The leftmost match starts on the line where the DFA stopped, and no
		// earlier than pos.
		if m != nil && !d.p.canNL {
			if ls := pos + bytes.LastIndexByte(text[pos:at], '\n') + 1; m[0] < ls {
				t.Fatalf("%q on %q from %d: DFA stopped at %d (line from %d), match is %v", re, text, pos, at, ls, m)
			}
		}
		// ... and no earlier than the longest match before where it stopped.
		if m != nil && d.p.maxLen >= 0 && m[0] < at-d.p.maxLen-utf8.UTFMax {
			t.Fatalf("%q on %q from %d: DFA stopped at %d, match %v is longer than %d", re, text, pos, at, m, d.p.maxLen)
		}
	}
}

// runeStarts returns the offsets where Go's decoding of text reads a rune, and
// len(text).
func runeStarts(text []byte) []int {
	var starts []int
	for i := 0; i < len(text); {
		starts = append(starts, i)
		_, w := utf8.DecodeRune(text[i:])
		i += w
	}
	return append(starts, len(text))
}

// allMatches lists the matches the replace iterator walks, with or without the DFA.
func allMatches(t testing.TB, re *regexp.Regexp, src []byte, useDFA bool) [][]int {
	t.Helper()
	it, err := newMatchIter(re, src)
	if err != nil {
		t.Fatal(err)
	}
	if !useDFA {
		it.dfa = nil
	}
	var all [][]int
	for m := it.next(); m != nil && len(all) < 1000; m = it.next() {
		all = append(all, m)
	}
	return all
}

func TestDFAMatchesLikeRegexp(t *testing.T) {
	texts := []string{
		"", "a", "abc", "a\nb", "\n", "x y_z", "k", "K", "\u212a", "é", "e\u0301",
		"\xff", "\xe2\x82", "\xe2\x82\xac", "\xe2\x82x", "\xed\xa0\x80", "\xf0\x9f\x98", "\xf0\x9f\x98\x80",
		"\xc0\x80", "\xf4\x90\x80\x80", "\xef\xbf\xbd", "a\xe2", "\xe2\n", "\xc3\xa9\xc3", "ab\xe2\x82\xacba",
		"foo bar", "foobar", "__x__", "12:34", "\r\n", "a\r",
	}
	patterns := []string{
		``, `a`, `abc`, `a|b`, `.`, `(?s).`, `[^a]`, `[^\n]`, `\x{FFFD}`, `[\x{FFFD}]`, `[^\x{FFFD}]`,
		`^`, `$`, `^$`, `^a`, `a$`, `(?m)^b`, `(?m)a$`, `\A`, `\z`, `\b`, `\B`, `\ba\b`, `\Bb`, `x\b`,
		`(?i)k`, `(?i)K`, `(?i)é`, `é`, `€`, `[€-€]`, `\pL`, `\PL`, `\p{Greek}`, `[\x80-\x{10FFFF}]`,
		`[\x{D7FF}-\x{E000}]`, `\x{10FFFF}`, `[^a-z]+`, `a*`, `a+?`, `(a|ab)(c|bcd)`, `(?:\.[0-9]{1,3}){3}`,
		`[[:alpha:]]+`, `\w+\s\w+`, `(?U)a+`, `\Qa.b\E`, `.{3}`, `^.{2}$`, `[a\n]`, `\n`, `(?i)ǅ`,
		`x*$`, `\b\B`, `^\b`, `\b$`, `\x{FFFD}$`, `^\x{FFFD}`, `\x{FFFD}\x{FFFD}`, `.\x{FFFD}`,
	}
	for _, p := range patterns {
		re, d := dfaFor(t, p)
		for _, s := range texts {
			checkDFA(t, re, d, []byte(s))
		}
	}
}

func TestDFARandom(t *testing.T) {
	atoms := []string{"a", "b", ".", "[ab]", "[^a]", `\b`, `\B`, "^", "$", `\x{FFFD}`, "é", `\pL`,
		"(?i)k", `\n`, `\s`, "x*", "(a|b)", "a+?", `[\x80-\x{10FFFF}]`, `\A`, `\z`, "(?m:^)", "(?m:$)",
		"(?s:.)", "€", "(?:ab)*", "[^\n]?", `\d{2}`}
	pieces := []string{"a", "b", "é", "\xe2", "\x82", "\xac", "\xff", "\n", " ", "k", "K", "\u212a", "x",
		"€", "\xed\xa0\x80", "\xf0\x9f", "\xc3", "7", "_"}
	rng := rand.New(rand.NewPCG(1, 2))
	n := 3000
	if testing.Short() {
		// The Windows leg runs -short under Wine: this is OS-independent matching, run
		// in full on Linux; the Windows binary checks a tenth of the same patterns.
		n = 300
		t.Logf("-short: %d random patterns instead of 3000", n)
	}
	for ; n > 0; n-- {
		var pat strings.Builder
		for k := rng.IntN(4) + 1; k > 0; k-- {
			pat.WriteString(atoms[rng.IntN(len(atoms))])
		}
		re, err := regexp.Compile(pat.String())
		if err != nil {
			continue
		}
		_, d := dfaFor(t, pat.String())
		for j := 0; j < 8; j++ {
			var text strings.Builder
			for k := rng.IntN(7); k > 0; k-- {
				text.WriteString(pieces[rng.IntN(len(pieces))])
			}
			checkDFA(t, re, d, []byte(text.String()))
		}
	}
}

// The replace iterator finds exactly Go's matches, groups included, with the DFA
// choosing where Go's regexp starts.
func TestDFAMatchPositions(t *testing.T) {
	tests := []struct{ pattern, src string }{
		{`(\w+)=(\w*)`, "a=1\nb=\nno equals here\n\nc=33 d=4"},
		{`x*`, "axxb\nxx\n"},
		{`^`, "a\nb"},
		{`(?m)^(\w)`, "ab\ncd\n\nef"},
		{`$`, "a\nb\n"},
		{`(?m)$`, "a\nb\n"},
		{`\b`, "ab cd\nef"},
		{`[^a]`, "a\xe2\x82a\xe2\x82\xac\n\xff"},
		{`\x{FFFD}+`, "ok \xff\xfe and \xef\xbf\xbd\n\xe2\x82"},
		{`a|ab|abc`, "xabcx\nab"},
		{`(a+)(b)?`, "aab ab a\nb"},
		{`(?s)a.b`, "a\nb a\rb"},
		{`\n`, "a\n\nb"},
		{`[0-9]{2,3}`, "1 12 123 1234\n9999"},
		{`ERROR \w+`, strings.Repeat("INFO ok\n", 100) + "ERROR disk\n" + strings.Repeat("x\n", 50) + "ERROR net"},
	}
	for _, tc := range tests {
		re := regexp.MustCompile(tc.pattern)
		got := allMatches(t, re, []byte(tc.src), true)
		want := allMatches(t, re, []byte(tc.src), false)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q on %q:\n DFA-led %v\n Go only %v", tc.pattern, tc.src, got, want)
		}
	}
}

// appendSeqs encodes exactly the runes of its range: checked over every code point.
func TestDFAUTF8Sequences(t *testing.T) {
	ranges := [][2]rune{{0, 0x10FFFF}, {0x80, 0x7FF}, {0x7F, 0x800}, {0xD000, 0xE100}, {0xFFFD, 0xFFFD},
		{0x10000, 0x10FFFF}, {0x3B1, 0x3C9}, {0xFFFF, 0x10000}, {0x1F600, 0x1F64F}, {'a', 'z'}}
	var buf [utf8.UTFMax]byte
	for _, r := range ranges {
		seqs := appendSeqs(nil, r[0], r[1])
		for c := rune(0); c <= utf8.MaxRune; c++ {
			want := r[0] <= c && c <= r[1] && utf8.ValidRune(c)
			n := 1
			if utf8.ValidRune(c) {
				n = utf8.EncodeRune(buf[:], c)
			}
			got := false
			for _, s := range seqs {
				if s.n != n {
					continue
				}
				in := true
				for i := 0; i < n; i++ {
					in = in && s.lo[i] <= buf[i] && buf[i] <= s.hi[i]
				}
				got = got || in
			}
			if utf8.ValidRune(c) && got != want {
				t.Fatalf("range %U-%U: rune %U covered %v, want %v", r[0], r[1], c, got, want)
			}
		}
	}
}

// A small cache overflows and is rebuilt: the answers do not change.
func TestDFACacheReset(t *testing.T) {
	// The DFA of "an a eight letters from the end" needs 2^9 states on such text.
	re, d := dfaFor(t, `a[ab]{8}c`)
	d.budget = 4 << 10
	d.mayFail = false
	rng := rand.New(rand.NewPCG(3, 4))
	text := make([]byte, 20000)
	for i := range text {
		text[i] = "ab"[rng.IntN(2)]
	}
	for _, tail := range []string{"", "c", "bc", "abbbbbbbbc", "aaaaaaaaac"} {
		line := append(append([]byte(nil), text...), tail...)
		got, ok := dfaMatch(d, line)
		if !ok || got != re.Match(line) {
			t.Fatalf("tail %q: DFA %v (ok %v), regexp %v", tail, got, ok, re.Match(line))
		}
	}
	if d.resets == 0 {
		t.Fatal("the 4 KiB cache was never reset: the test does not test resets")
	}
	if d.used > d.budget {
		t.Fatalf("cache holds %d bytes, over its budget %d", d.used, d.budget)
	}
}

// When the cache keeps overflowing, the DFA gives up and the Matcher answers with
// Go's regexp from then on, with the same answers.
func TestDFAGivesUp(t *testing.T) {
	re := regexp.MustCompile(`a[ab]{10}c`)
	m := NewMatcher(re)
	if m.d == nil {
		t.Fatal("no DFA to give up")
	}
	m.d.budget = 2 << 10
	rng := rand.New(rand.NewPCG(5, 6))
	line := make([]byte, 300)
	for n := 0; n < 200; n++ {
		for i := range line {
			line[i] = "abc"[rng.IntN(3)]
		}
		if got, want := m.Match(line), re.Match(line); got != want {
			t.Fatalf("line %q: Matcher %v, regexp %v", line, got, want)
		}
	}
	if m.d != nil {
		t.Fatalf("the DFA never gave up (%d resets)", m.d.resets)
	}
	// The replace iterator gives up the same way and still finds Go's matches.
	src := bytes.Repeat([]byte("abbababbbaabc\n"), 2000)
	for i := range src {
		if src[i] != '\n' {
			src[i] = "abc"[rng.IntN(3)]
		}
	}
	it, err := newMatchIter(re, src)
	if err != nil {
		t.Fatal(err)
	}
	it.dfa.budget = 2 << 10
	var got [][]int
	for m := it.next(); m != nil; m = it.next() {
		got = append(got, m)
	}
	if it.dfa != nil {
		t.Fatal("the iterator's DFA never gave up")
	}
	// The pattern has no empty matches, so Go's FindAll agrees with ECMAScript's rules.
	if want := re.FindAllSubmatchIndex(src, -1); !reflect.DeepEqual(got, want) {
		t.Fatalf("after giving up: %d matches, Go finds %d", len(got), len(want))
	}
}

// A stream cannot be read again, so matchStream never gives up, however small the
// cache.
func TestDFAStreamNeverGivesUp(t *testing.T) {
	re, d := dfaFor(t, `a[ab]{10}c`)
	d.budget = 2 << 10
	rng := rand.New(rand.NewPCG(7, 8))
	text := make([]byte, 50000)
	for i := range text {
		text[i] = "ab"[rng.IntN(2)]
	}
	text = append(text, "abbbbbbbbbbc"...)
	rest := text
	got := d.matchStream(func() (byte, bool) {
		if len(rest) == 0 {
			return 0, false
		}
		b := rest[0]
		rest = rest[1:]
		return b, true
	})
	if !got || !re.Match(text) {
		t.Fatalf("stream: DFA %v, regexp %v", got, re.Match(text))
	}
	if d.failed || d.resets == 0 {
		t.Fatalf("failed %v after %d resets; want many resets and no failure", d.failed, d.resets)
	}
}

// Programs too large for the DFA get none; Go's regexp matches alone.
func TestDFAProgramTooLarge(t *testing.T) {
	word := strings.Repeat("abcdefghij", 7)
	re := regexp.MustCompile(`(?:` + word + `){1000}`) // 70,000 instructions
	if newDFAProg(re) != nil {
		t.Fatalf("%d instructions: got a DFA program; want none", 70000)
	}
	m := NewMatcher(re)
	if m.d != nil || m.Match([]byte(word)) {
		t.Fatal("the Matcher without a DFA answers wrongly")
	}
	// Go's regexp alone matching 70,000 bytes against 70,000 instructions takes
	// seconds of CPU and runs no OS code: the Windows leg (-short, under Wine) leaves
	// it to Linux.
	if testing.Short() {
		t.Log("-short: the 70,000-byte match by Go's regexp alone is left to the full run")
	} else if !m.MatchString(strings.Repeat(word, 1000)) {
		t.Fatal("the Matcher without a DFA misses a match")
	}
	// One class's automaton serves every instruction that uses it, so a long run of
	// a large class stays within the bound.
	if newDFAProg(regexp.MustCompile(`\pL{1000}`)) == nil {
		t.Error(`\pL{1000}: no DFA program`)
	}
}

func FuzzDFA(f *testing.F) {
	for _, s := range [][2]string{
		{`a.b`, "axb a\nb"}, {`(\w+)=(.*)`, "k=v\nx=y"}, {`(?i)h.llo`, "HELLO"}, {`.`, "\xff\xfe"},
		{`\x{FFFD}`, "\xe2\x82\xac\xe2\x82"}, {`[^a]$`, "a\xf0\x9f\x98"}, {`\bé\B`, "é_"}, {`(?m)^$`, "\n\n"},
		{`(?i)k+`, "\u212ak"}, {`[\x80-\x{10FFFF}]+`, "\xc0\x80\xed\xa0\x80"}, {`^\z|a*`, ""},
		{`(?:\.[0-9]{1,3}){3}`, "10.0.0.1"}, {`\pL+\s\PL`, "αβγ δ"}, {`(a|b)*?c`, "ababc\nc"},
	} {
		f.Add(s[0], []byte(s[1]), false)
	}
	f.Fuzz(func(t *testing.T, pattern string, text []byte, fold bool) {
		if len(pattern) > MaxPatternLen || len(text) > 1024 {
			return
		}
		var res []*regexp.Regexp
		if re, err := regexp.Compile(pattern); err == nil {
			res = append(res, re) // RE2's own meaning
		}
		if re, err := Compile(pattern, fold); err == nil {
			res = append(res, re) // what the actions compile
		}
		if re, err := CompileName(pattern); err == nil {
			res = append(res, re) // search_dir's whole-name form
		}
		for _, re := range res {
			p := newDFAProg(re)
			if p == nil {
				continue // Go's regexp alone: nothing to compare
			}
			checkDFA(t, re, p.newDFA(), text)
			// A tiny cache that is reset (and may give up) answers the same.
			small := p.newDFA()
			small.budget = 1 << 10
			checkDFA(t, re, small, text)
			got := allMatches(t, re, text, true)
			want := allMatches(t, re, text, false)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q on %q: DFA-led matches %v, Go finds %v", re, text, got, want)
			}
		}
	})
}

func TestRuneStartBefore(t *testing.T) {
	src := []byte("a\xe2\x82\xacb\xe2\x82c\x80\x80\x80\x80d\xf0\x9f\x98\x80")
	starts := map[int]bool{}
	for _, s := range runeStarts(src) {
		starts[s] = true
	}
	for pos := range src {
		if !starts[pos] {
			continue
		}
		for q := pos; q < len(src); q++ {
			want := q
			for !starts[want] {
				want--
			}
			if got := runeStartBefore(src, pos, q); got != want {
				t.Errorf("runeStartBefore(pos %d, q %d) = %d, want %d", pos, q, got, want)
			}
		}
	}
}

func TestMaxMatchLen(t *testing.T) {
	tests := []struct {
		pattern string
		want    int
	}{
		{`abc`, 3}, {`é`, 2}, {`(?i)k`, 4}, {`[a-z]{3}`, 3}, {`[^a]`, 4}, {`.`, 4}, {`a|bcd`, 3},
		{`a*`, -1}, {`a+`, -1}, {`a{2,}`, -1}, {`(?:)*`, 0}, {`\b^$`, 0}, {`a?b{0,2}`, 3},
		{`[A-Z]{5}\s[a-z]{4}`, 10}, {`[\x{10000}-\x{10FFFF}]`, 4}, {`\x{FFFD}`, 3},
	}
	for _, tc := range tests {
		tree, err := syntax.Parse(tc.pattern, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		if got := maxMatchLen(tree); got != tc.want {
			t.Errorf("maxMatchLen(%q) = %d, want %d", tc.pattern, got, tc.want)
		}
	}
}
