package pattern

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"
)

func TestNestedQuantifiersTooLarge(t *testing.T) {
	tests := []struct {
		pattern string
		refused bool
	}{
		// Upstream refused these; Go's engine does not backtrack and their programs are
		// a handful of instructions, so they are accepted.
		{"(a+)+", false},
		{"(a*)+", false},
		{"(a+)*", false},
		{"(a*){2}", false},
		{"(b|a+)+", false},
		{"(a+){", false}, // not a repetition at all in Go: a literal '{'
		{`(\.[0-9]{1,3}){3}`, false},
		{`^([0-9]{1,3}\.){3}[0-9]{1,3}$`, false},
		{`([0-9a-f]{2}:){5}[0-9a-f]{2}`, false},
		{`(?:[0-9a-f]{4}:){7}[0-9a-f]{4}`, false},
		{`(\w+\s*)+$`, false},
		{`(x+x+)+y`, false},
		{`(?:(?:a{10}){10}){10}`, false}, // 1000 copies of a: within the limit
		{`(?:a{500}){2}`, false},         // exactly 1000 instructions
		// Never nested, so never refused by this guard (Go caps one count at 1000).
		{"a{1000}", false},
		{`[0-9a-f]{64}`, false},
		{`.{0,1000}`, false},
		{"hello", false},
		{"", false},
		// Nested repetitions that expand past the limit.
		{`(?:a{500}){3}`, true},
		{`((a{10}){10}){10}`, true}, // the groups' captures make it 1220
		{`(.{0,100}){10}`, true},
		{`(?:(?:.?){10}){100}b`, true},
		{`(?:[a-z]+\s?){500}`, true},
		{`((a{10}){10}){10}x((b{2}){2}){300}`, true},
		{`(a{100}b){100}`, true}, // the inner repetition need not end the group
		{`((a{100})){100}`, true},
		// Go cannot compile these at all: the counts multiply past 1000 copies.
		{`(a{1000}){1000}`, true},
		{`((a{10}){10}){11}`, true},
		{`(?:x{2,}){501}`, true},
		// Invalid counts on their own are Compile's to report, not the guard's.
		{`a{1001}`, false},
		{`(a{2}){1001}`, false},
		{`a{3,2}`, false},
		{`(a{2,1}){2}`, false},
		{`(a`, false},
		{`\`, false},
	}
	for _, tc := range tests {
		if got := NestedQuantifiersTooLarge(tc.pattern); got != tc.refused {
			t.Errorf("NestedQuantifiersTooLarge(%q) = %v, want %v", tc.pattern, got, tc.refused)
		}
	}
}

// The guard's size is an upper bound: every nested repetition of an accepted pattern
// compiles to at most MaxNestedSize instructions, so the guard never accepts a larger
// program than it documents.
func FuzzNestedQuantifiersTooLarge(f *testing.F) {
	for _, s := range []string{"(a+)+", `(\.[0-9]{1,3}){3}`, "((a{10}){10}){10}", "(?:a{500}){2}",
		`(a{1000}){1000}`, `(?:x?){100}`, `(?i)(?:k{3}|s{20}){40}`, `(\pL{20}\d?){45}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pattern string) {
		if len(pattern) > MaxPatternLen {
			return
		}
		refused := NestedQuantifiersTooLarge(pattern)
		tree, err := syntax.Parse(translateEscapes(pattern), syntax.Perl)
		if err != nil {
			if refused && !strings.Contains(err.Error(), "invalid repeat count") {
				t.Fatalf("%q refused though Go rejects it for another reason: %v", pattern, err)
			}
			return
		}
		if refused {
			return
		}
		var check func(re *syntax.Regexp) bool // reports whether re contains a repetition
		check = func(re *syntax.Regexp) bool {
			inner := false
			for _, sub := range re.Sub {
				inner = check(sub) || inner
			}
			switch re.Op {
			case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
				if inner {
					prog, err := syntax.Compile(re.Simplify())
					if err == nil && len(prog.Inst) > MaxNestedSize+2 { // +2: Compile's fail and match
						t.Fatalf("%q accepted, but its repetition %v compiles to %d instructions",
							pattern, re, len(prog.Inst))
					}
				}
				return true
			}
			return inner
		}
		check(tree)
		if _, err := regexp.Compile(translateEscapes(pattern)); err != nil {
			t.Fatalf("%q parses but does not compile: %v", pattern, err)
		}
	})
}
