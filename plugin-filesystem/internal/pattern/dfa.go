package pattern

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"
)

// A lazy DFA answers "does this text contain a match" for the regular expressions of
// the search, search_dir and replace actions, at a few table lookups per byte, where
// Go's regexp simulates the whole program on every byte. It is built from the very
// program Go's regexp runs (the same parse, Simplify and Compile), so its answers are
// Go's: docs/filesystem.md ("How regular expressions are matched") describes it.
//
// A DFA state is the set of program threads alive at a position, built the first
// time the search reaches it and cached with its transitions after that. Only
// whether some match exists is computed; the actions that need a match's position or
// groups ask Go's regexp for them where the DFA says a match is (see iter.go).
//
// Semantics carried over exactly:
//   - Bytes. Go decodes the text with utf8.DecodeRune: a valid encoding is one rune,
//     any other byte is U+FFFD of width 1. Every rune instruction reads bytes through
//     its runeAuto (utf8auto.go). A lead byte 0xC2-0xF4 is U+FFFD only when the bytes
//     after it do not complete an encoding, which is not known when the lead is read:
//     the threads that read it as U+FFFD are kept apart as "conditional" and the
//     validator follows the encoding until it completes (the conditional threads
//     die) or breaks (they replace the others, which were all in the middle of that
//     rune). The bytes in between are continuation bytes, so only one such condition
//     is ever open.
//   - Assertions. ^ $ \A \z \b \B depend only on whether the bytes on either side are
//     '\n', an ASCII word character, or absent (Go's EmptyOpContext; a non-ASCII rune
//     or U+FFFD is neither). A state records the kind of the byte before it, and the
//     closure over assertions is taken when the next byte (or the end) is known.
//
// The cache is bounded (dfaCacheBudget). When it fills up, it is emptied and rebuilt
// from the current state; when that happens again before the search has gone ten
// bytes per cached state, the DFA gives up and the caller goes on with Go's regexp
// (RE2's rule). A program too large to compile into byte automata within
// maxDFAProgram is never given a DFA.

// dfaCacheBudget bounds the memory of one DFA's states and transitions, in bytes.
const dfaCacheBudget = 2 << 20

// maxDFAProgram bounds the compiled form: program instructions plus the edges of the
// byte automata. Larger programs are left to Go's regexp.
const maxDFAProgram = 1 << 16

// The kinds of byte before a position that assertions look at.
const (
	ctxOther = iota // a byte that is neither, or any byte when the program has no assertions
	ctxStart        // no byte: the start of the text
	ctxNL           // '\n'
	ctxWord         // [0-9A-Za-z_]
	numCtx
)

// Special transition values. A real transition holds the target's row offset, which
// is above 0 and below tAccel, so one unsigned comparison (n-1 >= tAccel-1) sends
// every special value to the slow path.
const (
	tUnknown uint32 = 0              // not computed yet
	tAccel   uint32 = ^uint32(0) - 3 // to the accelerated state (see dfa.acc)
	tFail    uint32 = ^uint32(0) - 2 // the DFA gave up (never stored)
	tMatch   uint32 = ^uint32(0) - 1 // a match has been found
	tDead    uint32 = ^uint32(0)     // no thread left: no match can follow
)

// The column after the classes in every row caches the state's answer at the end of
// the text: 0 not known yet, eotNo or eotYes.
const (
	eotNo  = 1
	eotYes = 2
)

// dfaProg is the immutable, shareable part of a DFA: the program and its byte
// automata.
type dfaProg struct {
	inst    []syntax.Inst
	start   uint32
	loop    uint32  // pseudo-instruction of the unanchored search, or noLoop
	auto    []int32 // per pc (and loop): index in autos, -1 for other instructions
	autos   []*runeAuto
	classes [256]uint8 // byte -> equivalence class: bytes in a class act alike
	eotCol  int        // number of classes: the column of the end-of-text answer
	stride  int        // row length, eotCol+1
	// ctxTrack is set when the program has assertions, so states must record the
	// kind of byte before them.
	ctxTrack bool
	// canNL is set when some rune instruction matches '\n', so a match may span lines.
	canNL bool
	// maxLen is the longest a match can be, in bytes, or -1 when unbounded.
	maxLen int
}

const noLoop = ^uint32(0)

// newDFAProg compiles re for the lazy DFA, or returns nil when the program is too
// large (Go's regexp then does all the matching).
func newDFAProg(re *regexp.Regexp) *dfaProg {
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return nil
	}
	prog, err := syntax.Compile(tree.Simplify())
	if err != nil || len(prog.Inst) > maxDFAProgram {
		return nil
	}
	p := &dfaProg{inst: prog.Inst, start: uint32(prog.Start), loop: noLoop, maxLen: maxMatchLen(tree)}
	// A program every match of which starts at the start of the text needs no
	// search loop: its threads die and the DFA stops early. StartCond is all bits
	// when nothing can match at all, which is anchored too.
	if prog.StartCond()&syntax.EmptyBeginText == 0 {
		p.loop = uint32(len(prog.Inst))
	}
	p.auto = make([]int32, len(prog.Inst)+1)
	shared := map[string]int32{}
	size := len(prog.Inst)
	autoFor := func(ranges []rune) int32 {
		key := string(ranges)
		if id, ok := shared[key]; ok {
			return id
		}
		a := newRuneAuto(ranges)
		size += a.size()
		id := int32(len(p.autos))
		p.autos = append(p.autos, a)
		shared[key] = id
		return id
	}
	for pc := range prog.Inst {
		i := &prog.Inst[pc]
		p.auto[pc] = -1
		switch i.Op {
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			ranges := instRanges(i)
			if runesContain(ranges, '\n') {
				p.canNL = true
			}
			p.auto[pc] = autoFor(ranges)
		case syntax.InstEmptyWidth:
			p.ctxTrack = true
		}
		if size > maxDFAProgram {
			return nil
		}
	}
	p.auto[len(prog.Inst)] = autoFor([]rune{0, utf8.MaxRune})
	p.makeClasses()
	return p
}

// maxMatchLen returns the most bytes a match of re can span, or -1 when a repetition
// is unbounded. A rune counts the length of the longest encoding it may have; a byte
// read as U+FFFD counts one.
func maxMatchLen(re *syntax.Regexp) int {
	const unbounded = -1
	switch re.Op {
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				n += utf8.UTFMax // its case variants may be longer
			} else {
				n += max(utf8.RuneLen(r), 1)
			}
		}
		return n
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return 0
		}
		return encodedLen(re.Rune[len(re.Rune)-1])
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax
	case syntax.OpCapture, syntax.OpQuest:
		return maxMatchLen(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus, syntax.OpRepeat:
		n := maxMatchLen(re.Sub[0])
		switch {
		case n == 0:
			return 0
		case n < 0 || re.Op != syntax.OpRepeat || re.Max < 0:
			return unbounded
		}
		return n * re.Max
	case syntax.OpConcat, syntax.OpAlternate:
		total := 0
		for _, sub := range re.Sub {
			n := maxMatchLen(sub)
			if n < 0 {
				return unbounded
			}
			if re.Op == syntax.OpConcat {
				total += n
			} else {
				total = max(total, n)
			}
		}
		return total
	}
	return 0 // empty-width assertions and the empty match
}

// encodedLen is the length of r's UTF-8 encoding, or of the longest encoding of a
// rune below it.
func encodedLen(r rune) int {
	switch {
	case r < 0x80:
		return 1
	case r < 0x800:
		return 2
	case r < 0x10000:
		return 3
	}
	return utf8.UTFMax
}

// instRanges returns the runes a rune instruction matches, as sorted pairs lo, hi,
// exactly as Inst.MatchRunePos decides.
func instRanges(i *syntax.Inst) []rune {
	switch i.Op {
	case syntax.InstRuneAny:
		return []rune{0, utf8.MaxRune}
	case syntax.InstRuneAnyNotNL:
		return []rune{0, '\n' - 1, '\n' + 1, utf8.MaxRune}
	case syntax.InstRune1:
		return []rune{i.Rune[0], i.Rune[0]}
	}
	if len(i.Rune) != 1 {
		return slices.Clone(i.Rune)
	}
	// A single rune is a literal, which matches its case-folding orbit under the
	// fold flag.
	r0 := i.Rune[0]
	runes := []rune{r0}
	if syntax.Flags(i.Arg)&syntax.FoldCase != 0 {
		for r := unicode.SimpleFold(r0); r != r0; r = unicode.SimpleFold(r) {
			runes = append(runes, r)
		}
	}
	slices.Sort(runes)
	out := make([]rune, 0, 2*len(runes))
	for _, r := range runes {
		if n := len(out); n > 0 && out[n-1]+1 == r {
			out[n-1] = r
			continue
		}
		out = append(out, r, r)
	}
	return out
}

func runesContain(ranges []rune, r rune) bool {
	for i := 0; i+1 < len(ranges); i += 2 {
		if ranges[i] <= r && r <= ranges[i+1] {
			return true
		}
	}
	return false
}

// makeClasses splits the 256 byte values into classes that no automaton edge, the
// validator or an assertion tells apart, so the transition table needs one column
// per class instead of 256.
func (p *dfaProg) makeClasses() {
	var cut [257]bool
	fffd := false
	for _, a := range p.autos {
		fffd = fffd || a.fffd
		for _, n := range a.nodes {
			for _, e := range n.edges {
				cut[e.lo], cut[int(e.hi)+1] = true, true
			}
		}
	}
	if fffd {
		for _, b := range validatorBounds {
			cut[b] = true
		}
	}
	if p.ctxTrack {
		for _, r := range [...][2]int{{'\n', '\n'}, {'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}} {
			cut[r[0]], cut[r[1]+1] = true, true
		}
	}
	c := 0
	for b := 0; b < 256; b++ {
		if cut[b] && b > 0 {
			c++
		}
		p.classes[b] = uint8(c)
	}
	p.eotCol = c + 1
	p.stride = c + 2
}

func (p *dfaProg) out(pc uint32) uint32 {
	if pc == p.loop {
		return pc
	}
	return p.inst[pc].Out
}

func isWordByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '_'
}

func (p *dfaProg) ctxOf(b byte) uint8 {
	switch {
	case !p.ctxTrack:
		return ctxOther
	case b == '\n':
		return ctxNL
	case isWordByte(b):
		return ctxWord
	}
	return ctxOther
}

// flagsAt returns the assertions that hold between a byte of kind ctx and next (a
// byte, or -1 for the end of the text), as syntax.EmptyOpContext computes them.
func flagsAt(ctx uint8, next int) syntax.EmptyOp {
	var op syntax.EmptyOp
	switch ctx {
	case ctxStart:
		op |= syntax.EmptyBeginText | syntax.EmptyBeginLine
	case ctxNL:
		op |= syntax.EmptyBeginLine
	}
	nextWord := false
	switch {
	case next < 0:
		op |= syntax.EmptyEndText | syntax.EmptyEndLine
	case next == '\n':
		op |= syntax.EmptyEndLine
	default:
		nextWord = isWordByte(byte(next))
	}
	if (ctx == ctxWord) != nextWord {
		op |= syntax.EmptyWordBoundary
	} else {
		op |= syntax.EmptyNoWordBoundary
	}
	return op
}

// A thread is a program counter and a node of its rune instruction's automaton:
// node 0 is the instruction itself (before its rune), others are inside a rune.
func thread(pc, node uint32) uint64 { return uint64(pc)<<32 | uint64(node) }

// dstate is one DFA state.
type dstate struct {
	threads []uint64 // sorted; not yet closed over empty transitions
	// While an encoding is open (v != 0): cond holds the threads that read its lead
	// as U+FFFD, valid only if the encoding breaks, and cm records that one of them
	// already reached a match.
	cond []uint64
	v    uint8
	cm   bool
	ctx  uint8
}

// dfa is a DFA's cache. It is not safe for concurrent use; each search makes its own
// from the shared dfaProg.
type dfa struct {
	p      *dfaProg
	trans  []uint32 // rows of stride entries; row 0 is unused so offsets are > 0
	states []dstate
	index  map[string]uint32
	start  [numCtx]uint32 // row offset of each start state, 0 when not built
	used   int            // bytes of states and rows, against budget
	budget int            // dfaCacheBudget; smaller in tests
	epoch  int            // counts resets, so a transition computed across one is not stored

	// acc is the state an unanchored search without assertions spends most of its
	// time in: only the search loop alive, waiting for a byte that can begin a
	// match. Transitions into it are stored as tAccel, and the scan then skips
	// the bytes that lead back to it (skip[b] = 1) eight at a time, with lookups
	// that do not wait on each other, instead of one dependent transition per
	// byte. 0: no such state (yet).
	acc      uint32
	skip     [256]byte
	accStale bool // acc's row changed since skip was made

	// Giving up: allowed unless the caller cannot switch engines mid-text.
	mayFail  bool
	failed   bool
	resets   int
	resetAt  int64 // progress at the last reset
	progress int64 // bytes of the texts finished
	textPos  int   // bytes read of the current text, set while a transition is computed

	seen  []uint32 // closure's visited marks, by generation
	gen   uint32
	stack []uint32
	buf   [3][]uint64
	key   []byte
}

func (p *dfaProg) newDFA() *dfa {
	d := &dfa{p: p, budget: dfaCacheBudget, mayFail: true, seen: make([]uint32, len(p.inst)+1)}
	d.reset()
	return d
}

func (d *dfa) reset() {
	d.trans = append(d.trans[:0], make([]uint32, d.p.stride)...)
	d.states = append(d.states[:0], dstate{})
	d.index = map[string]uint32{}
	d.start = [numCtx]uint32{}
	d.acc, d.accStale = 0, true
	d.used = 0
	d.epoch++
}

// startOff returns the row offset of the start state for a text whose preceding byte
// is of kind ctx, or tFail.
func (d *dfa) startOff(ctx uint8) uint32 {
	if !d.p.ctxTrack {
		ctx = ctxOther
	}
	if off := d.start[ctx]; off != 0 {
		return off
	}
	pc := d.p.loop
	if pc == noLoop {
		pc = d.p.start
	}
	off := d.toState([]uint64{thread(pc, 0)}, nil, 0, false, ctx)
	if off != tFail {
		d.start[ctx] = off
		if d.p.loop != noLoop && !d.p.ctxTrack {
			d.acc, d.accStale = off, true
		}
	}
	return off
}

// skipFrom returns the first offset at or after i whose byte leaves the accelerated
// state, or len(text).
func skipFrom[T string | []byte](d *dfa, text T, i int) int {
	if d.accStale {
		for b := range d.skip {
			d.skip[b] = b2u8(d.trans[int(d.acc)+int(d.p.classes[b])] == tAccel)
		}
		d.accStale = false
	}
	sk := &d.skip
	for len(text)-i >= 8 {
		w := text[i : i+8]
		if sk[w[0]]&sk[w[1]]&sk[w[2]]&sk[w[3]]&sk[w[4]]&sk[w[5]]&sk[w[6]]&sk[w[7]] == 0 {
			break
		}
		i += 8
	}
	for i < len(text) && sk[text[i]] != 0 {
		i++
	}
	return i
}

// closure follows the empty transitions from threads under the assertions flags and
// appends the threads that read a byte to out. It reports whether a Match is reached.
func (d *dfa) closure(threads []uint64, flags syntax.EmptyOp, out []uint64) ([]uint64, bool) {
	p := d.p
	d.gen++
	if d.gen == 0 {
		clear(d.seen)
		d.gen = 1
	}
	matched := false
	for _, t := range threads {
		if uint32(t) != 0 {
			out = append(out, t) // inside a rune: nothing to follow
			continue
		}
		d.stack = append(d.stack[:0], uint32(t>>32))
		for len(d.stack) > 0 {
			pc := d.stack[len(d.stack)-1]
			d.stack = d.stack[:len(d.stack)-1]
			if d.seen[pc] == d.gen {
				continue
			}
			d.seen[pc] = d.gen
			if pc == p.loop {
				out = append(out, thread(pc, 0))
				d.stack = append(d.stack, p.start)
				continue
			}
			i := &p.inst[pc]
			switch i.Op {
			case syntax.InstAlt, syntax.InstAltMatch:
				d.stack = append(d.stack, i.Arg, i.Out)
			case syntax.InstCapture, syntax.InstNop:
				d.stack = append(d.stack, i.Out)
			case syntax.InstEmptyWidth:
				if syntax.EmptyOp(i.Arg)&^flags == 0 {
					d.stack = append(d.stack, i.Out)
				}
			case syntax.InstMatch:
				matched = true
			case syntax.InstFail:
			default:
				out = append(out, thread(pc, 0))
			}
		}
	}
	return out, matched
}

// step moves byte-reading threads over b. A thread whose rune b completes lands on
// the next instruction (not yet closed); one that reads b as a lead byte taken for
// U+FFFD lands in cond.
func (d *dfa) step(threads []uint64, b byte, out, cond []uint64) ([]uint64, []uint64) {
	p := d.p
	for _, t := range threads {
		pc, node := uint32(t>>32), uint32(t)
		a := p.autos[p.auto[pc]]
		for _, e := range a.nodes[node].edges {
			if e.lo <= b && b <= e.hi {
				if e.next == accept {
					out = append(out, thread(p.out(pc), 0))
				} else {
					out = append(out, thread(pc, uint32(e.next)))
				}
			}
		}
		if node == 0 && a.fffd {
			switch {
			case invalidAlone(b):
				out = append(out, thread(p.out(pc), 0))
			case isLead(b):
				cond = append(cond, thread(p.out(pc), 0))
			}
		}
	}
	return out, cond
}

// compute returns the transition of the state at row offset off on byte b, and
// stores it.
func (d *dfa) compute(off uint32, b byte) uint32 {
	st := d.states[int(off)/d.p.stride]
	epoch := d.epoch
	res := d.transition(&st, b)
	if res == d.acc && res != 0 {
		res = tAccel
	}
	if res != tFail && d.epoch == epoch {
		d.trans[int(off)+int(d.p.classes[b])] = res
		if off == d.acc {
			d.accStale = true
		}
	}
	return res
}

func (d *dfa) transition(st *dstate, b byte) uint32 {
	threads, ctx := st.threads, st.ctx
	if st.v != 0 {
		outcome, v := validatorStep(st.v, b)
		switch outcome {
		case seqComplete:
			u, _ := d.step(st.threads, b, d.buf[0][:0], nil)
			d.buf[0] = u
			return d.toState(u, nil, 0, false, ctxOther)
		case seqMore:
			u, _ := d.step(st.threads, b, d.buf[0][:0], nil)
			cl, m := d.closure(st.cond, flagsAt(ctxOther, int(b)), d.buf[1][:0])
			c, _ := d.step(cl, b, d.buf[2][:0], nil)
			d.buf[0], d.buf[1], d.buf[2] = u, cl, c
			return d.toState(u, c, v, st.cm || m, ctxOther)
		}
		// The encoding broke at b: its lead was U+FFFD after all.
		if st.cm {
			return tMatch
		}
		threads, ctx = st.cond, ctxOther
	}
	cl, m := d.closure(threads, flagsAt(ctx, int(b)), d.buf[1][:0])
	d.buf[1] = cl
	if m {
		return tMatch
	}
	u, c := d.step(cl, b, d.buf[0][:0], d.buf[2][:0])
	d.buf[0], d.buf[2] = u, c
	var v uint8
	if len(c) > 0 {
		v = validatorStart(b)
	}
	return d.toState(u, c, v, false, d.p.ctxOf(b))
}

// atEnd reports whether the text, ending in the state at row offset off, has a
// match at its end.
func (d *dfa) atEnd(off uint32) bool {
	if r := d.trans[int(off)+d.p.eotCol]; r != 0 {
		return r == eotYes
	}
	st := &d.states[int(off)/d.p.stride]
	threads, ctx, matched := st.threads, st.ctx, false
	if st.v != 0 {
		// The text ends inside an encoding: its lead was U+FFFD.
		threads, ctx, matched = st.cond, ctxOther, st.cm
	}
	if !matched {
		cl, m := d.closure(threads, flagsAt(ctx, -1), d.buf[1][:0])
		d.buf[1] = cl
		matched = m
	}
	r := uint32(eotNo)
	if matched {
		r = eotYes
	}
	d.trans[int(off)+d.p.eotCol] = r
	return matched
}

// toState returns the row offset of the state with these contents, adding it to the
// cache when it is new, or tDead, or tFail when the DFA gives up. u and c are
// scratch: toState sorts them and copies what it keeps.
func (d *dfa) toState(u, c []uint64, v uint8, cm bool, ctx uint8) uint32 {
	u = sortUnique(u)
	c = sortUnique(c)
	if len(c) == 0 && !cm {
		v = 0
	}
	if v == 0 {
		c, cm = nil, false
	}
	if len(u) == 0 && v == 0 {
		return tDead
	}
	k := append(d.key[:0], ctx, v, b2u8(cm), byte(len(u)), byte(len(u)>>8), byte(len(u)>>16))
	for _, t := range u {
		k = appendU64(k, t)
	}
	for _, t := range c {
		k = appendU64(k, t)
	}
	d.key = k
	if id, ok := d.index[string(k)]; ok {
		return id * uint32(d.p.stride)
	}
	cost := 4*d.p.stride + 2*len(k) + 8*(len(u)+len(c)) + 160
	if d.used+cost > d.budget {
		if d.mayFail && d.resets > 0 && d.progress+int64(d.textPos)-d.resetAt < 10*int64(len(d.states)) {
			d.failed = true
			return tFail
		}
		d.resets++
		d.resetAt = d.progress + int64(d.textPos)
		d.reset()
	}
	id := uint32(len(d.states))
	d.states = append(d.states, dstate{threads: slices.Clone(u), cond: slices.Clone(c), v: v, cm: cm, ctx: ctx})
	d.trans = append(d.trans, make([]uint32, d.p.stride)...)
	d.index[string(k)] = id
	d.used += cost
	return id * uint32(d.p.stride)
}

func sortUnique(s []uint64) []uint64 {
	if len(s) < 2 {
		return s
	}
	slices.Sort(s)
	return slices.Compact(s)
}

func appendU64(b []byte, v uint64) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24), byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56))
}

func b2u8(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// dfaMatch reports whether text contains a match; ok is false when the DFA gave up
// (the caller must then ask Go's regexp).
func dfaMatch[T string | []byte](d *dfa, text T) (matched, ok bool) {
	s := d.start[ctxStart]
	if s == 0 {
		if s = d.startOff(ctxStart); s == tFail {
			return false, false
		}
	}
	i, n := walk(d, text, 0, s)
	d.progress += int64(i)
	switch n {
	case tMatch:
		return true, true
	case tDead:
		return false, true
	case tFail:
		return false, false
	}
	if r := d.trans[uint(n)+uint(d.p.eotCol)]; r != 0 {
		return r == eotYes, true
	}
	return d.atEnd(n), true
}

// scanFrom looks for a match that starts at or after pos in src, where the text
// before pos is src[:pos] (for assertions). It returns the position at which a match
// is known to have ended: the match ended there, or earlier with only the lead and
// continuation bytes of one encoding in between (no '\n'). -1: no match. ok false:
// the DFA gave up.
func (d *dfa) scanFrom(src []byte, pos int) (at int, ok bool) {
	ctx := uint8(ctxStart)
	if pos > 0 {
		ctx = d.p.ctxOf(src[pos-1])
	}
	s := d.startOff(ctx)
	if s == tFail {
		return -1, false
	}
	i, n := walk(d, src, pos, s)
	d.progress += int64(i - pos)
	switch n {
	case tMatch:
		return i - 1, true
	case tDead:
		return -1, true
	case tFail:
		return -1, false
	}
	if d.atEnd(n) {
		return len(src), true
	}
	return -1, true
}

// walk runs the DFA over text from offset i in the state at row offset s. It stops at
// the first byte whose transition is tMatch, tDead or tFail and returns the offset
// after that byte and the value; at the end of the text it returns len(text) and the
// state reached. This is the loop every byte goes through.
func walk[T string | []byte](d *dfa, text T, i int, s uint32) (int, uint32) {
	from := i
	if s == d.acc {
		i = skipFrom(d, text, i)
	}
	tr, cls := d.trans, &d.p.classes
	for i < len(text) {
		b := text[i]
		n := tr[uint(s)+uint(cls[b])]
		i++
		if n-1 < tAccel-1 {
			s = n
			continue
		}
		if n == tUnknown {
			d.textPos = i - 1 - from
			n = d.compute(s, b)
			d.textPos = 0
			tr = d.trans
			if n-1 < tAccel-1 {
				s = n
				continue
			}
		}
		if n != tAccel {
			return i, n
		}
		s = d.acc
		i = skipFrom(d, text, i)
	}
	return len(text), s
}

// matchStream reports whether the bytes next delivers contain a match. It never
// gives up (the bytes cannot be read again): a cache that keeps overflowing is
// emptied and rebuilt as often as needed.
func (d *dfa) matchStream(next func() (byte, bool)) bool {
	mayFail := d.mayFail
	d.mayFail = false
	defer func() { d.mayFail = mayFail }()
	s := d.startOff(ctxStart)
	for {
		b, more := next()
		if !more {
			return d.atEnd(s)
		}
		n := d.trans[uint(s)+uint(d.p.classes[b])]
		if n == tUnknown {
			n = d.compute(s, b)
		}
		switch n {
		case tMatch:
			return true
		case tDead:
			return false
		case tAccel:
			n = d.acc
		}
		s = n
	}
}
