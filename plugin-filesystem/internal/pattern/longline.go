package pattern

import (
	"bytes"
	"context"
	"errors"
	"io"
	"unicode/utf8"
)

// lineStream delivers one line that did not fit in the searcher's buffer, as a byte
// and rune stream a matcher can consume: first the part already in memory, then the
// rest read from the source through a small scratch buffer. It ends before the '\n'
// and hides a '\r' that ends the line, exactly like the in-memory line model. Bytes
// read past the '\n' are kept in rest for the searcher to continue with.
type lineStream struct {
	ctx     context.Context
	win     []byte // unread raw bytes: the in-memory head first, then a scratch window
	r       io.Reader
	scratch []byte

	ended  bool   // the line's '\n' or the end of the text was reached
	eof    bool   // r reported the end of the text
	err    error  // a read error or the context's error; sticky
	rest   []byte // bytes after the '\n', inside scratch
	n      int64  // raw bytes of the line consumed so far
	lastCR bool   // the last raw byte consumed was '\r'

	held    byte // a raw byte read to decide whether a '\r' ends the line
	hasHeld bool
	la      [utf8.UTFMax]byte // stripped bytes read ahead to decode a rune
	nla     int
}

// fill replaces the window with the next chunk of r.
func (l *lineStream) fill() bool {
	if l.eof || l.err != nil {
		return false
	}
	if err := l.ctx.Err(); err != nil {
		l.err = err
		return false
	}
	for empty := 0; ; empty++ {
		n, err := l.r.Read(l.scratch)
		switch {
		case errors.Is(err, io.EOF):
			l.eof = true
		case err != nil:
			l.err = err
		case n == 0 && empty > 100:
			l.err = io.ErrNoProgress
		}
		if n > 0 {
			l.win = l.scratch[:n]
			return true
		}
		if l.eof || l.err != nil {
			return false
		}
	}
}

// raw returns the next byte of the line before '\r' removal.
func (l *lineStream) raw() (byte, bool) {
	if l.ended {
		return 0, false
	}
	for len(l.win) == 0 {
		if !l.fill() {
			l.ended = true
			return 0, false
		}
	}
	b := l.win[0]
	l.win = l.win[1:]
	if b == '\n' {
		l.ended = true
		l.rest, l.win = l.win, nil
		return 0, false
	}
	l.n++
	l.lastCR = b == '\r'
	return b, true
}

// next returns the next byte of the line as the matcher sees it.
func (l *lineStream) next() (byte, bool) {
	var b byte
	if l.hasHeld {
		b, l.hasHeld = l.held, false
	} else {
		var ok bool
		if b, ok = l.raw(); !ok {
			return 0, false
		}
	}
	if b != '\r' {
		return b, true
	}
	after, ok := l.raw()
	if !ok {
		return 0, false // the '\r' ends the line: not part of it
	}
	l.held, l.hasHeld = after, true
	return '\r', true
}

// ReadByte implements io.ByteReader.
func (l *lineStream) ReadByte() (byte, error) {
	if l.nla > 0 {
		b := l.la[0]
		copy(l.la[:], l.la[1:l.nla])
		l.nla--
		return b, nil
	}
	if b, ok := l.next(); ok {
		return b, nil
	}
	return 0, io.EOF
}

// ReadRune implements io.RuneReader, decoding exactly as Go's matcher decodes an
// in-memory line: a malformed byte is U+FFFD of width 1.
func (l *lineStream) ReadRune() (rune, int, error) {
	if l.nla == 0 {
		b, ok := l.next()
		if !ok {
			return 0, 0, io.EOF
		}
		if b < utf8.RuneSelf {
			return rune(b), 1, nil
		}
		l.la[0], l.nla = b, 1
	}
	for l.nla < len(l.la) {
		b, ok := l.next()
		if !ok {
			break
		}
		l.la[l.nla] = b
		l.nla++
	}
	r, w := utf8.DecodeRune(l.la[:l.nla])
	copy(l.la[:], l.la[w:l.nla])
	l.nla -= w
	return r, w, nil
}

// drain skips to the end of the line and reports a read or context error.
func (l *lineStream) drain() error {
	for !l.ended {
		if i := bytes.IndexByte(l.win, '\n'); i >= 0 {
			l.consumed(l.win[:i])
			l.rest, l.win, l.ended = l.win[i+1:], nil, true
			break
		}
		l.consumed(l.win)
		l.win = nil
		if !l.fill() {
			l.ended = true
		}
	}
	return l.err
}

func (l *lineStream) consumed(b []byte) {
	if len(b) > 0 {
		l.n += int64(len(b))
		l.lastCR = b[len(b)-1] == '\r'
	}
}

// strippedLen returns the length of the whole line without its trailing '\r'. It is
// meaningful after drain.
func (l *lineStream) strippedLen() int64 {
	if l.lastCR {
		return l.n - 1
	}
	return l.n
}

// matchStream reports whether the line contains the finder's pattern, reading it
// byte by byte with the Knuth-Morris-Pratt automaton so no part of it is held.
func (f *finder) matchStream(l *lineStream) bool {
	pat := f.pat
	if len(pat) == 0 {
		return true
	}
	fail := make([]int, len(pat))
	for i, k := 1, 0; i < len(pat); i++ {
		for k > 0 && pat[i] != pat[k] {
			k = fail[k-1]
		}
		if pat[i] == pat[k] {
			k++
		}
		fail[i] = k
	}
	j := 0
	for {
		b, ok := l.next()
		if !ok {
			return false
		}
		if f.fold {
			b = lowerASCII[b]
		}
		for j > 0 && b != pat[j] {
			j = fail[j-1]
		}
		if b == pat[j] {
			j++
		}
		if j == len(pat) {
			return true
		}
	}
}
