package pattern

import (
	"errors"
	"regexp/syntax"
	"strconv"
	"strings"
)

// MaxNestedSize is the largest program, in instructions, that a repetition of
// something that itself repeats may expand to.
const MaxNestedSize = 1000

// NestedQuantifiersTooLarge reports whether the nested-quantifier guard refuses a
// regular expression: a repetition (*, +, ?, {n,m}) applied to a sub-pattern that
// contains another repetition, where writing the counted repetitions out (x{2,5} is
// five copies of x, and nested counts multiply) gives that repetition a program of
// more than MaxNestedSize instructions. A nesting Go's parser cannot compile at all
// because its counts multiply past 1000 copies, such as (a{1000}){1000}, is refused
// too, rather than reported as an invalid repeat count. The search, search_dir and
// replace actions refuse such patterns.
//
// Go's engine never backtracks, so the upstream shape "(a+)+" costs nothing and is
// accepted, as is (\.[0-9]{1,3}){3}. What does cost is expansion: the program's size
// is the compile time and memory, the work per byte of Go's matcher, and the size of
// the lazy DFA's states. The rule and its figures are in docs/filesystem.md. The size
// is Go's own estimate (the one its parser checks against its limits), which is never
// below the compiled size. A pattern that does not parse for another reason is left to
// Compile to report.
func NestedQuantifiersTooLarge(pattern string) bool {
	tree, err := syntax.Parse(translateEscapes(pattern), syntax.Perl)
	if err != nil {
		var se *syntax.Error
		return errors.As(err, &se) && se.Code == syntax.ErrInvalidRepeatSize && countsInRange(se.Expr)
	}
	_, _, refuse := expansion(tree)
	return refuse
}

// expansion returns the program size of re (Go's estimate), whether re contains a
// repetition, and whether a repetition in it breaks the rule.
func expansion(re *syntax.Regexp) (size int64, repeats, refuse bool) {
	var subs []int64
	for _, sub := range re.Sub {
		n, r, bad := expansion(sub)
		if bad {
			return 0, true, true
		}
		subs = append(subs, n)
		repeats = repeats || r
	}
	switch re.Op {
	case syntax.OpLiteral:
		size = int64(len(re.Rune))
	case syntax.OpCapture:
		size = 2 + subs[0]
	case syntax.OpStar:
		size = 2 + subs[0]
	case syntax.OpPlus, syntax.OpQuest:
		size = 1 + subs[0]
	case syntax.OpConcat, syntax.OpAlternate:
		for _, n := range subs {
			size += n
		}
		if re.Op == syntax.OpAlternate {
			size += int64(len(subs) - 1)
		}
	case syntax.OpRepeat:
		switch {
		case re.Max < 0 && re.Min == 0:
			size = 2 + subs[0] // x*
		case re.Max < 0:
			size = 1 + int64(re.Min)*subs[0] // x{n,}: n copies, the last one looping
		default:
			size = int64(re.Max)*subs[0] + int64(re.Max-re.Min) // x{n,m}: m copies, m-n optional
		}
	}
	size = max(size, 1)
	switch re.Op {
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		if repeats && size > MaxNestedSize {
			return size, true, true
		}
		repeats = true
	}
	return size, repeats, false
}

// countsInRange reports whether the repetition operator text op ("{n}", "{n,}",
// "{n,m}") has counts Go accepts on their own (at most 1000, min <= max). Go's parser
// then refused it only because it multiplies with a repetition inside it.
func countsInRange(op string) bool {
	if len(op) < 3 || op[0] != '{' || op[len(op)-1] != '}' {
		return false
	}
	body := op[1 : len(op)-1]
	lo, hi, comma := strings.Cut(body, ",")
	minN, err := strconv.Atoi(lo)
	if err != nil || minN < 0 || minN > 1000 {
		return false
	}
	if !comma {
		return true
	}
	if hi == "" {
		return true
	}
	maxN, err := strconv.Atoi(hi)
	return err == nil && minN <= maxN && maxN <= 1000
}
