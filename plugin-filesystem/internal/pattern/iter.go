package pattern

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"unicode/utf8"
)

// matchIter walks the matches of a regular expression over a text with ECMAScript's
// global-match rules: after a non-empty match the next search starts where it ended
// and may find an empty match right there; after an empty match the next search
// starts one character later. Go's FindAll differs in one place (it drops an empty
// match that touches the previous match, so "aaa" with a* gives one match instead of
// two), which is why the loop is written out here.
//
// The iterator also keeps memory flat: FindAll would build the index slices of every
// match of a 100 MiB file at once.
type matchIter struct {
	re *regexp.Regexp
	// behind is set when the pattern looks at the character before the match start
	// (^, \b, \B). Searching a suffix of the text would lose that character, so such a
	// pattern is searched through behind, which re-reads one character before the
	// start position. It is `\A(?s:.)(?s:.*?)(pattern)`: anchored, one character of
	// context, then the same leftmost-first search Go performs for an unanchored
	// pattern, with the real match in group 1.
	behind *regexp.Regexp
	// startOnly is set when every match must begin at the start of the text ("^..."
	// without the m flag): after the first search there is nothing left to find,
	// and searching on would scan the whole text for nothing.
	startOnly bool
	src       []byte
	pos       int
	done      bool
}

func newMatchIter(re *regexp.Regexp, src []byte) (*matchIter, error) {
	it := &matchIter{re: re, src: src}
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("re-parse of compiled pattern: %w", err)
	}
	if prog, err := syntax.Compile(tree.Simplify()); err == nil {
		it.startOnly = prog.StartCond()&syntax.EmptyBeginText != 0
	}
	if looksBehind(tree) {
		it.behind, err = regexp.Compile(`\A(?s:.)(?s:.*?)(` + re.String() + `)`)
		if err != nil {
			return nil, fmt.Errorf("context form of pattern: %w", err)
		}
	}
	return it, nil
}

// looksBehind reports whether the tree contains an assertion that depends on the
// character before the current position.
func looksBehind(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpBeginText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	}
	for _, sub := range re.Sub {
		if looksBehind(sub) {
			return true
		}
	}
	return false
}

// next returns the submatch index pairs (absolute offsets into src) of the next match,
// or nil when there is none.
func (it *matchIter) next() []int {
	if it.done || it.pos > len(it.src) || (it.startOnly && it.pos > 0) {
		return nil
	}
	m := it.find(it.pos)
	if m == nil {
		it.done = true
		return nil
	}
	if m[1] > m[0] {
		it.pos = m[1]
	} else if m[1] >= len(it.src) {
		it.done = true
	} else {
		_, w := utf8.DecodeRune(it.src[m[1]:])
		it.pos = m[1] + w
	}
	return m
}

func (it *matchIter) find(pos int) []int {
	if pos == 0 || it.behind == nil {
		m := it.re.FindSubmatchIndex(it.src[pos:])
		shift(m, pos)
		return m
	}
	_, w := utf8.DecodeLastRune(it.src[:pos])
	start := pos - w
	m := it.behind.FindSubmatchIndex(it.src[start:])
	if m == nil {
		return nil
	}
	// Drop the whole-context pair; group 1 is the real match.
	m = m[2:]
	shift(m, start)
	if m[0] < pos {
		// The context character decoded differently when read forwards (only
		// possible inside malformed UTF-8). Fall back to the plain suffix search.
		m = it.re.FindSubmatchIndex(it.src[pos:])
		shift(m, pos)
	}
	return m
}

func shift(m []int, by int) {
	for i, v := range m {
		if v >= 0 {
			m[i] = v + by
		}
	}
}
