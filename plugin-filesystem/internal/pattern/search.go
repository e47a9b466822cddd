package pattern

import (
	"bytes"
	"context"
	"errors"
	"io"
	"regexp"
	"strings"
)

// DefaultBufferSize is the searcher's read size, and the most of one line it holds in
// memory. It is large enough that the per-read cost vanishes next to the scan, and
// small enough to stay in the CPU cache while the buffer is scanned twice (once for
// the pattern, once to count newlines).
const DefaultBufferSize = 256 << 10

// longLineChunk is the read size while the rest of an over-long line streams through.
const longLineChunk = 64 << 10

// Match is one matching line.
type Match struct {
	// Line is the 1-based line number.
	Line int
	// Text is the line without its '\n' and without one trailing '\r'. It points into
	// the searcher's buffer and is valid only during the callback.
	Text []byte
	// Truncated is set when the line is longer than the searcher's buffer: Text then
	// holds the line's first DefaultBufferSize bytes. The line was still matched as a
	// whole.
	Truncated bool
}

// Searcher finds the lines of a text that contain a pattern, the way the search action
// defines lines: split on '\n', a trailing '\n' does not start another line, and one
// trailing '\r' is removed before matching. A Searcher holds no per-search state and
// may be used by several goroutines at once.
//
// Memory is bounded by the buffer size whatever the input: the text is read in chunks,
// a chunk is searched as a whole (the pattern first, newlines counted only up to each
// hit), and a line longer than the buffer is matched by streaming the rest of it
// through a small second buffer. Such a line is reported with its first bytes and
// Truncated set, never skipped.
type Searcher struct {
	find    *finder        // literal pattern, or the regex's required literal; nil: try every line
	re      *regexp.Regexp // nil in literal mode
	prog    *dfaProg       // re's lazy DFA; nil: Go's regexp matches the lines
	never   bool           // no line can match (the literal contains '\n')
	bufSize int
}

// NewLiteralSearcher returns a Searcher for lines containing pattern as a substring.
// caseInsensitive folds ASCII letters only; other bytes must match exactly. An empty
// pattern matches every line.
func NewLiteralSearcher(pattern string, caseInsensitive bool) *Searcher {
	return &Searcher{
		find:    newFinder([]byte(pattern), caseInsensitive),
		never:   strings.IndexByte(pattern, '\n') >= 0,
		bufSize: DefaultBufferSize,
	}
}

// NewRegexSearcher returns a Searcher for lines in which re finds a match (anywhere in
// the line; '^' and '$' anchor the line's ends). re normally comes from Compile. When
// the pattern contains a literal every match must include, lines without it are
// skipped before the regular expression runs. Lines are matched with a lazy DFA
// where it can (see Matcher).
func NewRegexSearcher(re *regexp.Regexp) *Searcher {
	s := &Searcher{re: re, prog: newDFAProg(re), bufSize: DefaultBufferSize}
	if lit, fold, ok := requiredLiteral(re); ok {
		s.find = newFinder(lit, fold)
		s.never = bytes.IndexByte(lit, '\n') >= 0
	}
	return s
}

// Search reads r to the end, or until max lines have matched when max > 0, and calls fn
// for each matching line in order. It returns the number of matches reported. It stops
// early with fn's error if fn fails, with ctx's error if ctx ends (checked between
// chunks), and with the read error if r fails.
func (s *Searcher) Search(ctx context.Context, r io.Reader, max int, fn func(Match) error) (int, error) {
	st := scanState{line: 1, max: max, fn: fn}
	if s.never {
		return 0, nil
	}
	if s.re != nil {
		// The DFA's cache belongs to this search, so a Searcher stays shareable.
		st.m = newMatcher(s.re, s.prog)
	}
	buf := make([]byte, s.bufSize)
	var scratch []byte
	n, eof := 0, false
	for {
		if err := ctx.Err(); err != nil {
			return st.count, err
		}
		var err error
		if n, eof, err = fill(r, buf, n, eof); err != nil {
			return st.count, err
		}
		data := buf[:n]
		region := data
		if !eof {
			k := bytes.LastIndexByte(data, '\n')
			if k < 0 {
				// The buffer holds the start of one line and nothing else.
				if scratch == nil {
					scratch = make([]byte, min(longLineChunk, len(buf)))
				}
				ls := &lineStream{ctx: ctx, win: data, r: r, scratch: scratch}
				stop, err := s.longLine(ls, data, &st)
				if err != nil || stop {
					return st.count, err
				}
				n, eof = copy(buf, ls.rest), ls.eof
				continue
			}
			region = data[:k+1]
		}
		stop, err := s.scan(region, &st)
		if err != nil || stop {
			return st.count, err
		}
		if eof {
			return st.count, nil
		}
		n = copy(buf, data[len(region):])
	}
}

type scanState struct {
	line  int // number of the line that starts at the beginning of the current region
	count int
	max   int
	fn    func(Match) error
	m     *Matcher // regex mode
}

func (st *scanState) emit(m Match) (stop bool, err error) {
	st.count++
	if err := st.fn(m); err != nil {
		return true, err
	}
	return st.max > 0 && st.count >= st.max, nil
}

// fill reads into buf[n:] until buf is full, r is exhausted or r fails.
func fill(r io.Reader, buf []byte, n int, eof bool) (int, bool, error) {
	empty := 0
	for n < len(buf) && !eof {
		m, err := r.Read(buf[n:])
		n += m
		switch {
		case errors.Is(err, io.EOF):
			eof = true
		case err != nil:
			return n, eof, err
		case m == 0:
			if empty++; empty > 100 {
				return n, eof, io.ErrNoProgress
			}
		}
	}
	return n, eof, nil
}

var newline = []byte{'\n'}

// scan reports the matching lines of region, which holds whole lines only (the last
// one may lack its '\n' at the end of the text).
func (s *Searcher) scan(region []byte, st *scanState) (bool, error) {
	if s.find == nil {
		return s.scanEachLine(region, st)
	}
	pos, counted := 0, 0 // counted: newlines before this offset are in st.line
	for pos < len(region) {
		i := s.find.index(region[pos:])
		if i < 0 {
			break
		}
		at := pos + i
		start := counted + bytes.LastIndexByte(region[counted:at], '\n') + 1
		st.line += bytes.Count(region[counted:start], newline)
		counted = start
		end := len(region)
		if j := bytes.IndexByte(region[at:], '\n'); j >= 0 {
			end = at + j
		}
		text := trimCR(region[start:end])
		var ok bool
		if s.re == nil {
			// A literal hit that runs into the removed '\r' is not in the line.
			ok = at+len(s.find.pat) <= start+len(text)
		} else {
			ok = st.m.Match(text)
		}
		if ok {
			if stop, err := st.emit(Match{Line: st.line, Text: text}); stop || err != nil {
				return true, err
			}
		}
		if ok || s.re != nil {
			pos = end + 1
		} else {
			pos = at + 1
		}
	}
	st.line += bytes.Count(region[counted:], newline)
	return false, nil
}

// scanEachLine runs the regular expression on every line of region.
func (s *Searcher) scanEachLine(region []byte, st *scanState) (bool, error) {
	for pos := 0; pos < len(region); {
		end := len(region)
		if j := bytes.IndexByte(region[pos:], '\n'); j >= 0 {
			end = pos + j
		}
		text := trimCR(region[pos:end])
		if st.m.Match(text) {
			if stop, err := st.emit(Match{Line: st.line, Text: text}); stop || err != nil {
				return true, err
			}
		}
		st.line++
		pos = end + 1
	}
	return false, nil
}

// longLine matches one line longer than the buffer; head is its first part.
func (s *Searcher) longLine(ls *lineStream, head []byte, st *scanState) (bool, error) {
	var matched bool
	if s.re != nil {
		matched = st.m.matchStream(ls)
	} else {
		matched = s.find.matchStream(ls)
	}
	if err := ls.drain(); err != nil {
		return true, err
	}
	number := st.line
	st.line++
	if !matched {
		return false, nil
	}
	m := Match{Line: number, Text: head, Truncated: true}
	if n := ls.strippedLen(); n <= int64(len(head)) {
		m.Text, m.Truncated = head[:n], false
	}
	return st.emit(m)
}

func trimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}
