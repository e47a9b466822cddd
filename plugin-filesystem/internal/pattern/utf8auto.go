package pattern

import (
	"unicode/utf8"
)

// The lazy DFA reads bytes, while Go's regexp program reads runes. Each rune
// instruction of the program is therefore given a small byte automaton that accepts
// exactly the UTF-8 encodings of the runes the instruction matches, and also the bytes
// Go's matcher reads as U+FFFD when the instruction matches U+FFFD: Go decodes a byte
// that does not start a valid encoding as U+FFFD of width 1 (utf8.DecodeRune), so
// [^a] or . match such a byte, and a class without U+FFFD never does.

// byteSeq is one shape of UTF-8 encoding: every byte string whose i-th byte lies in
// lo[i]..hi[i] (i < n) is a valid encoding of a rune of the range it was made from.
type byteSeq struct {
	n      int
	lo, hi [utf8.UTFMax]byte
}

// appendSeqs appends the shapes that together encode exactly the runes lo..hi.
// Surrogates (U+D800..U+DFFF) have no valid encoding and are left out.
func appendSeqs(dst []byteSeq, lo, hi rune) []byteSeq {
	if lo > hi || lo > utf8.MaxRune || hi < 0 {
		return dst
	}
	lo, hi = max(lo, 0), min(hi, utf8.MaxRune)
	if lo <= 0xDFFF && hi >= 0xD800 {
		dst = appendSeqs(dst, lo, 0xD7FF)
		return appendSeqs(dst, 0xE000, hi)
	}
	// One length of encoding at a time.
	for _, top := range [...]rune{0x7F, 0x7FF, 0xFFFF} {
		if lo <= top && hi > top {
			dst = appendSeqs(dst, lo, top)
			return appendSeqs(dst, top+1, hi)
		}
	}
	n := utf8.RuneLen(lo)
	// Split until every byte position is a plain range: for each continuation
	// level, either lo and hi agree on the bits above it, or lo's bits below are
	// all zero and hi's all one.
	for i := 1; i < n; i++ {
		m := rune(1)<<(6*i) - 1
		if lo&^m == hi&^m {
			continue
		}
		if lo&m != 0 {
			dst = appendSeqs(dst, lo, lo|m)
			return appendSeqs(dst, (lo|m)+1, hi)
		}
		if hi&m != m {
			dst = appendSeqs(dst, lo, hi&^m-1)
			return appendSeqs(dst, hi&^m, hi)
		}
	}
	var a, b [utf8.UTFMax]byte
	utf8.EncodeRune(a[:], lo)
	utf8.EncodeRune(b[:], hi)
	s := byteSeq{n: n}
	for i := 0; i < n; i++ {
		s.lo[i], s.hi[i] = a[i], b[i]
	}
	return append(dst, s)
}

// accept is the autoEdge target meaning "the rune is complete".
const accept = -1

type autoEdge struct {
	lo, hi byte
	next   int32 // a node of the same automaton, or accept
}

type autoNode struct {
	edges []autoEdge
}

// runeAuto is the byte automaton of one set of runes. Node 0 is the entry. The
// automaton is nondeterministic (two edges of a node may share bytes); the DFA
// follows every edge that holds the byte. Nodes after the entry are shared by the
// encodings that end the same way.
type runeAuto struct {
	nodes []autoNode
	// fffd is set when the set holds U+FFFD: then the entry also takes, as one
	// whole rune, a byte that cannot start an encoding (0x80-0xBF, 0xC0, 0xC1,
	// 0xF5-0xFF) and a lead byte 0xC2-0xF4 whose encoding turns out to be invalid.
	// The second is known only from the bytes after it, so the DFA carries that
	// case as a condition (see dfa.go).
	fffd bool
}

// newRuneAuto builds the automaton of the runes in ranges (pairs lo, hi).
func newRuneAuto(ranges []rune) *runeAuto {
	a := &runeAuto{nodes: []autoNode{{}}}
	var seqs []byteSeq
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		if lo <= utf8.RuneError && utf8.RuneError <= hi {
			a.fffd = true
		}
		seqs = appendSeqs(seqs, lo, hi)
	}
	suffix := map[string]int32{}
	// tail returns the node that reads the ranges of s from position k on.
	var tail func(s *byteSeq, k int) int32
	tail = func(s *byteSeq, k int) int32 {
		if k == s.n {
			return accept
		}
		key := make([]byte, 0, 2*(s.n-k))
		for i := k; i < s.n; i++ {
			key = append(key, s.lo[i], s.hi[i])
		}
		if id, ok := suffix[string(key)]; ok {
			return id
		}
		next := tail(s, k+1)
		id := int32(len(a.nodes))
		a.nodes = append(a.nodes, autoNode{edges: []autoEdge{{s.lo[k], s.hi[k], next}}})
		suffix[string(key)] = id
		return id
	}
	for i := range seqs {
		s := &seqs[i]
		a.nodes[0].edges = append(a.nodes[0].edges, autoEdge{s.lo[0], s.hi[0], tail(s, 1)})
	}
	return a
}

// size is the number of edges, the measure of the automaton's memory.
func (a *runeAuto) size() int {
	n := 0
	for _, nd := range a.nodes {
		n += len(nd.edges) + 1
	}
	return n
}

// invalidAlone reports whether b can never start a valid encoding: Go reads it as
// U+FFFD of width 1 whatever follows.
func invalidAlone(b byte) bool {
	return 0x80 <= b && b <= 0xC1 || b >= 0xF5
}

// isLead reports whether b starts a multi-byte encoding when the right bytes follow.
func isLead(b byte) bool { return 0xC2 <= b && b <= 0xF4 }

// The validator follows the encoding a lead byte started, to learn whether Go reads
// the lead as the start of a rune or as U+FFFD. Its state packs how many continuation
// bytes are still needed (1 to 3) and the allowed range of the next one.
const (
	contAny = iota // 0x80-0xBF
	contE0         // 0xA0-0xBF after 0xE0 (no overlong forms)
	contED         // 0x80-0x9F after 0xED (no surrogates)
	contF0         // 0x90-0xBF after 0xF0 (no overlong forms)
	contF4         // 0x80-0x8F after 0xF4 (nothing above U+10FFFF)
	contKinds
)

func validatorState(need, kind int) uint8 { return uint8(1 + need*contKinds + kind) }

// validatorStart returns the validator state after lead byte b (isLead(b)).
func validatorStart(b byte) uint8 {
	switch {
	case b <= 0xDF:
		return validatorState(1, contAny)
	case b == 0xE0:
		return validatorState(2, contE0)
	case b == 0xED:
		return validatorState(2, contED)
	case b <= 0xEF:
		return validatorState(2, contAny)
	case b == 0xF0:
		return validatorState(3, contF0)
	case b == 0xF4:
		return validatorState(3, contF4)
	default:
		return validatorState(3, contAny)
	}
}

// Outcomes of validatorStep.
const (
	seqInvalid  = iota // b does not continue the encoding: the lead was U+FFFD
	seqComplete        // b ends a valid encoding
	seqMore            // b continues it; more bytes are needed
)

// validatorStep feeds byte b to validator state v (v != 0) and returns the outcome
// and, for seqMore, the next state.
func validatorStep(v uint8, b byte) (int, uint8) {
	need, kind := int(v-1)/contKinds, int(v-1)%contKinds
	lo, hi := byte(0x80), byte(0xBF)
	switch kind {
	case contE0:
		lo = 0xA0
	case contED:
		hi = 0x9F
	case contF0:
		lo = 0x90
	case contF4:
		hi = 0x8F
	}
	if b < lo || b > hi {
		return seqInvalid, 0
	}
	if need == 1 {
		return seqComplete, 0
	}
	return seqMore, validatorState(need-1, contAny)
}

// validatorBounds are the byte values where the validator's view of a byte changes;
// the DFA's byte classes must not straddle them.
var validatorBounds = [...]int{0x80, 0x90, 0xA0, 0xC0, 0xC2, 0xE0, 0xE1, 0xED, 0xEE, 0xF0, 0xF1, 0xF4, 0xF5}
