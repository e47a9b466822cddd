package pattern

import "testing"

func TestHasNestedQuantifiers(t *testing.T) {
	tests := []struct {
		pattern string
		want    bool
	}{
		// The upstream test vectors.
		{"(a+)+", true},
		{"(a*)+", true},
		{"(a+)*", true},
		{"(a*){2}", true},
		{"a+", false},
		{"(abc)+", false},
		{`\(a+\)+`, false},
		{"[a-z]+", false},
		{"hello", false},
		{"^foo$", false},
		{"[abc]+", false},
		{"a{3}", false},

		// Further cases of the same scan.
		{"(a?)?", true},
		{"(a+)?", true},
		{"(a+){", true}, // '{' after ')' counts even without a valid repeat
		{"(a{2})+", true},
		{"(a{2,})*", true},
		{"(a})+", false},    // '}' with no '{' before it is not a quantifier
		{"{(a})+", true},    // ... but is when a '{' appears anywhere earlier
		{`\{(a})+`, true},   // an escaped '{' still counts as earlier
		{"((a+))+", false},  // only the character right before ')' matters
		{"(a+)", false},     // nothing after ')'
		{"(a+)b+", false},   // ')' not followed by a quantifier
		{`(a\+)+`, false},   // escaped '+' is not a quantifier
		{`(a+\)+`, false},   // escaped ')' is not a group end
		{"([a+])+", false},  // ']' before ')'
		{"(a+|b)+", false},  // alternation: 'b' before ')'
		{"(b|a+)+", true},   // the quantifier is right before ')'
		{"(a+)(b+)+", true}, // second group
		{"(?:a+)+", true},   // non-capturing groups too
		{"(a++)+", true},
		{"", false},
		{`\`, false}, // lone trailing backslash
		{`(a+)\+`, false},
		{")+", false},  // no quantifier before
		{"a+)+", true}, // unbalanced, but the shape is there
		{"(a+)" + "+", true},
	}
	for _, tc := range tests {
		if got := HasNestedQuantifiers(tc.pattern); got != tc.want {
			t.Errorf("HasNestedQuantifiers(%q) = %v, want %v", tc.pattern, got, tc.want)
		}
		if got := nestedRef(tc.pattern); got != tc.want {
			t.Errorf("reference nestedRef(%q) = %v, want %v (the fuzz oracle is wrong)", tc.pattern, got, tc.want)
		}
	}
}

func FuzzHasNestedQuantifiers(f *testing.F) {
	for _, s := range []string{"(a+)+", `\(a+\)+`, "((a+))+", "{(a})+", "(a{2})*", `\`, "[(a+)]+"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pattern string) {
		if got, want := HasNestedQuantifiers(pattern), nestedRef(pattern); got != want {
			t.Fatalf("HasNestedQuantifiers(%q) = %v, reference says %v", pattern, got, want)
		}
	})
}

// nestedRef restates the rule differently for the fuzz target: split the pattern into
// tokens (an escape pair is one token), then look at every unescaped ')' and the
// tokens around it.
func nestedRef(p string) bool {
	type token struct {
		pos     int
		escaped bool
	}
	var toks []token
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' && i+1 < len(p) {
			toks = append(toks, token{pos: i, escaped: true})
			i++
			continue
		}
		toks = append(toks, token{pos: i})
	}
	isQuant := func(tk token) bool {
		if tk.escaped {
			return false
		}
		switch c := p[tk.pos]; c {
		case '+', '*', '?':
			return true
		case '}':
			for j := 0; j < tk.pos; j++ {
				if p[j] == '{' {
					return true
				}
			}
		}
		return false
	}
	for k, tk := range toks {
		if tk.escaped || p[tk.pos] != ')' || k == 0 || tk.pos+1 >= len(p) {
			continue
		}
		prev := toks[k-1]
		if prev.escaped || p[prev.pos] == '(' || p[prev.pos] == ')' || !isQuant(prev) {
			continue
		}
		switch p[tk.pos+1] {
		case '+', '*', '?', '{':
			return true
		}
	}
	return false
}
