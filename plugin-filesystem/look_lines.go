package main

import (
	"bytes"
	"context"
	"errors"
	"io"
)

// maxLineBytes is the most of one line a read row shows. A longer line is still
// counted and skipped as a whole; its row carries its first maxLineBytes bytes and a
// warning row follows. Upstream sends the whole line, but a row is capped at 4 MiB
// and the plugin must not hold a 100 MiB line in memory.
const maxLineBytes = 1 << 20

// lineChunk is the read size of pageLines.
const lineChunk = 64 << 10

// pageLines reads r to its end and calls emit for lines offset..offset+limit-1
// (1-based) in order, then returns the number of lines in the whole text. Lines are
// split on '\n'; a trailing '\n' does not start another line, a final segment
// without one is a line, and an empty text has none. One trailing '\r' is removed
// from each emitted line. An emitted line is cut at its first NUL byte, as upstream
// (which passes rows as C strings) shows it, and at maxLineBytes (cut is then set).
//
// Memory is bounded by lineChunk plus maxLineBytes whatever the input; lines outside
// the page are only counted.
func pageLines(ctx context.Context, r io.Reader, offset, limit int, emit func(n int, text []byte, cut bool)) (int, error) {
	buf := make([]byte, lineChunk)
	var cur []byte        // the current line's first maxLineBytes+1 bytes, when it is in the page
	var curLen int64      // the current line's length so far
	var last byte         // the current line's last byte
	line := 1             // number of the line being read
	end := offset + limit // first line after the page
	if end < offset {     // overflow: the page runs to the end
		end = int(^uint(0) >> 1)
	}
	inPage := func() bool { return line >= offset && line < end }
	finish := func() {
		if inPage() {
			n := curLen
			if n > 0 && last == '\r' {
				n--
			}
			text, cut := cur, n > maxLineBytes
			if cut {
				text = text[:maxLineBytes]
			} else {
				text = text[:n]
			}
			if i := bytes.IndexByte(text, 0); i >= 0 {
				text = text[:i]
			}
			emit(line, text, cut)
		}
		line++
		cur, curLen = cur[:0], 0
	}
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		k, err := r.Read(buf)
		data := buf[:k]
		for len(data) > 0 {
			if line >= end {
				// Past the page: count newlines only.
				nl := bytes.Count(data, []byte{'\n'})
				line += nl
				if data[len(data)-1] == '\n' {
					curLen = 0
				} else {
					curLen = 1 // a partial line is pending
				}
				break
			}
			i := bytes.IndexByte(data, '\n')
			seg := data
			if i >= 0 {
				seg = data[:i]
			}
			if len(seg) > 0 {
				if inPage() && len(cur) <= maxLineBytes {
					room := maxLineBytes + 1 - len(cur)
					cur = append(cur, seg[:min(room, len(seg))]...)
				}
				curLen += int64(len(seg))
				last = seg[len(seg)-1]
			}
			if i < 0 {
				break
			}
			finish()
			data = data[i+1:]
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if curLen > 0 {
		if line < end {
			finish()
		} else {
			line++
		}
	}
	return line - 1, nil
}
