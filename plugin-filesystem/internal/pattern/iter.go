package pattern

import (
	"bytes"
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
	// dfa finds where the next match is before Go's regexp is asked for it, so the
	// text between matches is crossed at the DFA's speed; nil when the pattern has
	// no DFA or the DFA gave up.
	dfa *dfa
	// prog is the DFA's program: whether a match may contain '\n' and how long it
	// may be say where Go's regexp can start (find).
	prog *dfaProg
	src  []byte
	pos  int
	done bool
}

func newMatchIter(re *regexp.Regexp, src []byte) (*matchIter, error) {
	it := &matchIter{re: re, src: src}
	if p := newDFAProg(re); p != nil {
		it.dfa, it.prog = p.newDFA(), p
	}
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

// find returns the leftmost-first match that starts at or after pos.
//
// The DFA finds at, where the match that ends first is known to have ended (at most
// the bytes of one encoding later, none of them '\n'). The leftmost match, the one Go
// reports, starts no later than that match, and no earlier than
//   - the start of at's line, when no match can contain '\n': a match starting on an
//     earlier line would end there, before the first end;
//   - at minus the longest possible match, when that is bounded: the leftmost match
//     ends at or after the first end.
//
// No match starts between pos and that bound, so Go's regexp started there (at a rune
// boundary, with the text before it as context) finds the same match as from pos, and
// reads only the bytes near it.
func (it *matchIter) find(pos int) []int {
	if it.dfa == nil {
		return it.findGo(pos)
	}
	at, ok := it.dfa.scanFrom(it.src, pos)
	if !ok {
		it.dfa = nil // gave up: Go's regexp alone from here on
		return it.findGo(pos)
	}
	if at < 0 {
		return nil
	}
	from := pos
	if !it.prog.canNL {
		from = max(from, pos+bytes.LastIndexByte(it.src[pos:at], '\n')+1)
	}
	if it.prog.maxLen >= 0 {
		from = max(from, runeStartBefore(it.src, pos, at-it.prog.maxLen-utf8.UTFMax))
	}
	if from > pos {
		if m := it.findGo(from); m != nil {
			return m
		}
		// Only a DFA mistake gets here; Go's regexp from pos has the last word.
	}
	return it.findGo(pos)
}

// runeStartBefore returns the last offset at or before q (and not before pos, itself
// one) where Go's decoding of src from pos reads a rune. A byte that is not a
// continuation byte (0x80-0xBF) always starts one; a continuation byte does unless
// it completes a valid encoding begun by one of the three bytes before it.
func runeStartBefore(src []byte, pos, q int) int {
	if q <= pos {
		return pos
	}
	if c := src[q]; c < 0x80 || c >= 0xC0 {
		return q
	}
	for k := 1; k < utf8.UTFMax && q-k >= pos; k++ {
		c := src[q-k]
		if c >= 0x80 && c < 0xC0 {
			continue
		}
		if _, w := utf8.DecodeRune(src[q-k:]); w > k {
			return q - k // q is inside the rune that starts there
		}
		break
	}
	return q
}

// findGo is find with Go's regexp alone.
func (it *matchIter) findGo(pos int) []int {
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
