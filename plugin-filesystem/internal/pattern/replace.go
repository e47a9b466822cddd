package pattern

import (
	"errors"
	"regexp"
	"strconv"
)

// DefaultMaxOutput is the output cap replace callers are expected to pass: the same
// 100 MiB the plugin allows for a file it reads or content it writes.
const DefaultMaxOutput = 100 << 20

// ErrOutputTooLarge is returned when a replacement would produce more than the
// caller's output cap. A template such as "$'" repeated over many matches grows the
// output quadratically; the cap is checked before each piece is appended, so memory
// never exceeds it.
var ErrOutputTooLarge = errors.New("replacement result too large")

// ReplaceAll replaces every match of re in src by the expansion of repl, and returns
// the new content and the number of matches. It is the regex replace with
// max_replacements 0.
//
// The template follows ECMAScript's replacement rules, not Go's Expand: $$ is a
// dollar sign, $& the match, $` the text before the match, $' the text after it,
// $1..$9 and $01..$99 a capture group (empty when the group did not take part). Two
// digits name a group only when that group exists; otherwise the first digit names
// the group and the second is literal, so "$10" with one group is group 1 then "0".
// A reference to a group that does not exist, $0, and a $ followed by anything else
// stay literal text.
//
// Matches are found with ECMAScript's global-match rules (see the package
// documentation in docs/filesystem.md): an empty match right after a non-empty one
// counts, so "aaa" with a* makes two replacements. When nothing matches, src itself is
// returned. maxOut caps the result's length (ErrOutputTooLarge).
func ReplaceAll(re *regexp.Regexp, src []byte, repl string, maxOut int) ([]byte, int, error) {
	t := parseTemplate(repl, re.NumSubexp())
	return replaceRegex(re, src, 0, maxOut, func(dst []byte, m []int, room int) ([]byte, bool) {
		if t.size(src, m) > room {
			return dst, false
		}
		return t.expand(dst, src, m), true
	})
}

// ReplaceFirst replaces the first n matches of re in src (n > 0; n <= 0 means all) by
// repl taken literally: no $ reference is expanded. It is the regex replace with
// max_replacements > 0, kept as upstream has it even though the same replacement
// string then behaves differently with and without a limit.
func ReplaceFirst(re *regexp.Regexp, src []byte, repl string, n, maxOut int) ([]byte, int, error) {
	return replaceRegex(re, src, n, maxOut, func(dst []byte, _ []int, room int) ([]byte, bool) {
		if len(repl) > room {
			return dst, false
		}
		return append(dst, repl...), true
	})
}

func replaceRegex(re *regexp.Regexp, src []byte, n, maxOut int,
	put func(dst []byte, m []int, room int) ([]byte, bool)) ([]byte, int, error) {
	it, err := newMatchIter(re, src)
	if err != nil {
		return nil, 0, err
	}
	var out []byte
	last, count := 0, 0
	for n <= 0 || count < n {
		m := it.next()
		if m == nil {
			break
		}
		if out == nil {
			out = make([]byte, 0, min(len(src), maxOut))
		}
		if len(out)+m[0]-last > maxOut {
			return nil, count, ErrOutputTooLarge
		}
		out = append(out, src[last:m[0]]...)
		var ok bool
		if out, ok = put(out, m, maxOut-len(out)); !ok {
			return nil, count, ErrOutputTooLarge
		}
		last = m[1]
		count++
	}
	if count == 0 {
		return src, 0, nil
	}
	if len(out)+len(src)-last > maxOut {
		return nil, count, ErrOutputTooLarge
	}
	return append(out, src[last:]...), count, nil
}

// ReplaceLiteral replaces occurrences of search in src by repl, scanning left to right
// without overlap, and returns the new content and the number of replacements. When
// caseInsensitive is set, ASCII letters match either case and every other byte (UTF-8
// included) must match exactly. n > 0 stops after n replacements; n <= 0 replaces all.
// An empty search replaces nothing. When nothing matches, src itself is returned.
func ReplaceLiteral(src []byte, search, repl string, caseInsensitive bool, n, maxOut int) ([]byte, int, error) {
	if search == "" {
		return src, 0, nil
	}
	f := newFinder([]byte(search), caseInsensitive)
	var out []byte
	last, count := 0, 0
	for n <= 0 || count < n {
		i := f.index(src[last:])
		if i < 0 {
			break
		}
		if out == nil {
			out = make([]byte, 0, min(len(src), maxOut))
		}
		if len(out)+i+len(repl) > maxOut {
			return nil, count, ErrOutputTooLarge
		}
		out = append(out, src[last:last+i]...)
		out = append(out, repl...)
		last += i + len(search)
		count++
	}
	if count == 0 {
		return src, 0, nil
	}
	if len(out)+len(src)-last > maxOut {
		return nil, count, ErrOutputTooLarge
	}
	return append(out, src[last:]...), count, nil
}

// template is a replacement string split into pieces once, so a file with a million
// matches does not re-scan it a million times.
type template []piece

type pieceKind uint8

const (
	pieceText   pieceKind = iota // text
	pieceGroup                   // capture group number group
	pieceMatch                   // $&
	pieceBefore                  // $`
	pieceAfter                   // $'
)

type piece struct {
	kind  pieceKind
	text  string
	group int
}

// parseTemplate splits repl by the ECMAScript GetSubstitution rules for a pattern with
// groups capture groups.
func parseTemplate(repl string, groups int) template {
	var t template
	text := func(s string) {
		if s == "" {
			return
		}
		if len(t) > 0 && t[len(t)-1].kind == pieceText {
			t[len(t)-1].text += s
			return
		}
		t = append(t, piece{kind: pieceText, text: s})
	}
	start := 0 // start of pending literal text
	for i := 0; i < len(repl); i++ {
		if repl[i] != '$' || i+1 >= len(repl) {
			continue
		}
		text(repl[start:i])
		c := repl[i+1]
		switch {
		case c == '$':
			text("$")
			i++
		case c == '&':
			t = append(t, piece{kind: pieceMatch})
			i++
		case c == '`':
			t = append(t, piece{kind: pieceBefore})
			i++
		case c == '\'':
			t = append(t, piece{kind: pieceAfter})
			i++
		case isDigit(c):
			digits := 1
			if i+2 < len(repl) && isDigit(repl[i+2]) {
				digits = 2
			}
			idx, _ := strconv.Atoi(repl[i+1 : i+1+digits])
			if idx > groups && digits == 2 {
				// Not a group: read it as one digit followed by a literal digit.
				digits = 1
				idx = int(c - '0')
			}
			if 1 <= idx && idx <= groups {
				t = append(t, piece{kind: pieceGroup, group: idx})
			} else {
				text(repl[i : i+1+digits])
			}
			i += digits
		default:
			// A $ before anything else is literal; the next byte is scanned normally.
			text("$")
		}
		start = i + 1
	}
	text(repl[start:])
	return t
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// size returns the length of the expansion for match m of src.
func (t template) size(src []byte, m []int) int {
	n := 0
	for _, p := range t {
		if p.kind == pieceText {
			n += len(p.text)
			continue
		}
		n += len(p.bytes(src, m))
	}
	return n
}

// expand appends the expansion for match m of src to dst.
func (t template) expand(dst, src []byte, m []int) []byte {
	for _, p := range t {
		if p.kind == pieceText {
			dst = append(dst, p.text...)
			continue
		}
		dst = append(dst, p.bytes(src, m)...)
	}
	return dst
}

// bytes returns what a non-text piece stands for in match m of src.
func (p piece) bytes(src []byte, m []int) []byte {
	switch p.kind {
	case pieceMatch:
		return src[m[0]:m[1]]
	case pieceBefore:
		return src[:m[0]]
	case pieceAfter:
		return src[m[1]:]
	}
	if 2*p.group+1 >= len(m) || m[2*p.group] < 0 {
		return nil // the group did not take part in this match
	}
	return src[m[2*p.group]:m[2*p.group+1]]
}
