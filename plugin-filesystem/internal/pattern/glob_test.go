package pattern

import (
	"strings"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		// The upstream test vectors.
		{"*.txt", "hello.txt", true},
		{"*.txt", "hello.cpp", false},
		{"test*", "testing", true},
		{"test?", "test1", true},
		{"test?", "test12", false},
		{"[abc]", "a", true},
		{"[abc]", "d", false},
		{"[a-z]", "m", true},
		{"[!a-z]", "1", true},
		{"*", "anything", true},
		{"", "", true},
		{"", "x", false},
		{"hello.txt", "hello.txt", true},
		{"hello.txt", "hello.txT", false},
		{"*test*", "my_test_file", true},
		{"*test*", "nope", false},
		{"h?llo", "hello", true},
		{"h?llo", "hallo", true},
		{"h?llo", "hllo", false},
		{"[a-z]*.[ch]pp", "main.cpp", true},
		{"[a-z]*.[ch]pp", "test.hpp", true},
		{"[a-z]*.[ch]pp", "Main.cpp", false},

		// '?' and '*' details.
		{"?", "", false},
		{"?", ".", true},
		{"*", "", true},
		{"**", "", true},
		{"a*", "a", true},
		{"*a", "a", true},
		{"*a", "ba", true},
		{"*a", "ab", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbYcZ", false},
		{"a*b*c*", "aXbYcZ", true},
		{"*ab", "aab", true},    // needs the star to back off one byte
		{"*aab", "aaab", true},  // and again
		{"a*a*a", "aa", false},  // not enough a's
		{"x*?y", "xy", false},   // '?' needs a byte
		{"x*?y", "x1y", true},   // '*' empty, '?' takes 1
		{"x*?y", "x12y", true},  // '*' takes 1
		{".*", ".hidden", true}, // '.' is literal
		{".*", "hidden", false},
		{"a.b", "axb", false},

		// Classes.
		{"[^a]", "^", true}, // '^' is a member, not negation
		{"[^a]", "b", false},
		{"[^a]", "a", true},
		{"[!a]", "a", false},
		{"[!a]", "b", true},
		{"[]", "]", false}, // class ends at the first ']': empty, matches nothing
		{"[]]", "]]", false},
		{"[]]", "]", false},
		{"[!]", "x", true}, // empty negated class matches any byte
		{"[!]", "", false},
		{"[a-]", "-", true}, // '-' before ']' is literal
		{"[a-]", "a", true},
		{"[a-]", "b", false},
		{"[-a]", "-", true},
		{"[z-a]", "m", false}, // reversed range is empty
		{"[a-c-e]", "d", false},
		{"[a-c-e]", "-", true}, // "a-c" then '-' then 'e'
		{"[a-c-e]", "e", true},
		{"[0-9][0-9]", "42", true},
		{"[0-9][0-9]", "4x", false},
		{"[abc", "b", true}, // unterminated: the rest is the class
		{"[abc", "[", false},
		{"[", "x", false}, // empty unterminated class
		{"[!", "x", true},
		{"x[", "x", false},
		{"[*]", "*", true}, // no special meaning inside a class
		{"[*]", "a", false},
		{"[?]", "?", true},
		{"[[]", "[", true},
		{"*[0-9]", "file9", true},
		{"*[0-9]", "file9x", false},

		// No escape character.
		{`\*`, `\x`, true},
		{`\*`, `*`, false},
		{`a\b`, `a\b`, true},

		// Bytes, not runes; case-sensitive.
		{"?", "é", false}, // two bytes
		{"??", "é", true},
		{"[\xc3]?", "é", true},
		{"\xff*", "\xff\xfe", true},
		{"ABC", "abc", false},
		{"[A-Z]", "a", false},
	}
	for _, tc := range tests {
		if got := GlobMatch(tc.pattern, tc.name); got != tc.want {
			t.Errorf("GlobMatch(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
		if got := globRef(tc.pattern, tc.name); got != tc.want {
			t.Errorf("reference globRef(%q, %q) = %v, want %v (the fuzz oracle is wrong)", tc.pattern, tc.name, got, tc.want)
		}
	}
}

// TestGlobMatchCostBound checks that hostile patterns cost at most a constant times
// len(pattern)*len(name) steps. A backtracking matcher that retries every star
// independently needs exponentially many steps on these inputs.
func TestGlobMatchCostBound(t *testing.T) {
	cases := []struct{ pattern, name string }{
		{strings.Repeat("*a", 20) + "b", strings.Repeat("a", 2000)},
		{strings.Repeat("*a", 60) + "*b", strings.Repeat("a", 5000)},
		{strings.Repeat("*?", 30) + "x", strings.Repeat("y", 3000)},
		{"*" + strings.Repeat("[a-z]", 40) + "0", strings.Repeat("q", 4000)},
	}
	for _, tc := range cases {
		ok, steps := globMatch(tc.pattern, tc.name)
		if ok {
			t.Errorf("pattern of length %d unexpectedly matched", len(tc.pattern))
		}
		bound := 2 * (len(tc.pattern) + 1) * (len(tc.name) + 1)
		if steps > bound {
			t.Errorf("pattern len %d, name len %d: %d steps, bound %d", len(tc.pattern), len(tc.name), steps, bound)
		}
	}
	// Doubling the name at most doubles the cost for a fixed pattern.
	p := strings.Repeat("*a", 30) + "b"
	_, s1 := globMatch(p, strings.Repeat("a", 1000))
	_, s2 := globMatch(p, strings.Repeat("a", 2000))
	if s2 > 3*s1 {
		t.Errorf("cost grew from %d to %d steps when the name doubled", s1, s2)
	}
}

func BenchmarkGlobMatchHostile(b *testing.B) {
	p := strings.Repeat("*a", 30) + "b"
	name := strings.Repeat("a", 4096)
	for b.Loop() {
		GlobMatch(p, name)
	}
}

func FuzzGlobMatch(f *testing.F) {
	seeds := [][2]string{
		{"*.txt", "hello.txt"}, {"[a-z]*.[ch]pp", "main.cpp"}, {"[!a-z]", "1"},
		{"[abc", "b"}, {"[]", "]"}, {"*a*a*b", "aaaa"}, {"[a-]?*", "-xy"}, {"", ""},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if len(pattern) > 64 || len(name) > 64 {
			return // keep the quadratic reference cheap
		}
		if got, want := GlobMatch(pattern, name), globRef(pattern, name); got != want {
			t.Fatalf("GlobMatch(%q, %q) = %v, reference says %v", pattern, name, got, want)
		}
	})
}

// globRef is an independent matcher for the fuzz target: it first turns the pattern
// into tokens (a class becomes a 256-entry set), then matches with a memoised
// recursion over (token, byte) positions, trying every split a '*' allows.
func globRef(pattern, name string) bool {
	type token struct {
		star bool
		set  [256]bool
	}
	var toks []token
	for i := 0; i < len(pattern); {
		var tk token
		switch pattern[i] {
		case '*':
			tk.star = true
			i++
		case '?':
			for c := range tk.set {
				tk.set[c] = true
			}
			i++
		case '[':
			j := i + 1
			neg := j < len(pattern) && pattern[j] == '!'
			if neg {
				j++
			}
			end := strings.IndexByte(pattern[j:], ']')
			var body string
			if end < 0 {
				body, i = pattern[j:], len(pattern)
			} else {
				body, i = pattern[j:j+end], j+end+1
			}
			var in [256]bool
			for k := 0; k < len(body); {
				if k+2 < len(body) && body[k+1] == '-' {
					for c := int(body[k]); c <= int(body[k+2]); c++ {
						in[c] = true
					}
					k += 3
					continue
				}
				in[body[k]] = true
				k++
			}
			for c := range in {
				tk.set[c] = in[c] != neg
			}
		default:
			tk.set[pattern[i]] = true
			i++
		}
		toks = append(toks, tk)
	}
	memo := map[[2]int]bool{}
	var match func(ti, ni int) bool
	match = func(ti, ni int) bool {
		key := [2]int{ti, ni}
		if v, ok := memo[key]; ok {
			return v
		}
		var r bool
		switch {
		case ti == len(toks):
			r = ni == len(name)
		case toks[ti].star:
			r = match(ti+1, ni) || (ni < len(name) && match(ti, ni+1))
		default:
			r = ni < len(name) && toks[ti].set[name[ni]] && match(ti+1, ni+1)
		}
		memo[key] = r
		return r
	}
	return match(0, 0)
}
