// Package rows formats result rows, the pipe-delimited lines every action writes.
//
// A row is one line: a literal row kind, then fields, joined by `|`. The rules here are
// the only place the project escapes row fields:
//
//   - every field: CR and LF become a space, so a row can never break the newline
//     framing the agent and the fleet server use;
//   - every field except the last: `|` becomes `\|` and a trailing `\` becomes `/`, so
//     a reader can split the row unambiguously;
//   - the last field is free text and stays raw apart from CR and LF.
//
// Row is a row not yet written, kind and raw fields, for the packages of a plugin that
// gather rows apart from the handler that writes them; nothing in it is escaped until
// the handler passes it to the SDK's writer.
package rows

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Format joins kind and fields into one row, escaping each field by its position.
func Format(kind string, fields ...string) string {
	var b strings.Builder
	n := len(kind)
	for _, f := range fields {
		n += len(f) + 2
	}
	b.Grow(n)
	if len(fields) == 0 {
		writeLast(&b, kind)
		return b.String()
	}
	writeInner(&b, kind)
	for i, f := range fields {
		b.WriteByte('|')
		if i == len(fields)-1 {
			writeLast(&b, f)
		} else {
			writeInner(&b, f)
		}
	}
	return b.String()
}

// Field escapes s as a field that is not the last of its row.
func Field(s string) string {
	if !strings.ContainsAny(s, "|\r\n") && !strings.HasSuffix(s, `\`) {
		return s
	}
	var b strings.Builder
	writeInner(&b, s)
	return b.String()
}

// Line folds CR and LF into spaces and leaves everything else as it is. It is the
// escaping of a last field, and of a pre-formatted row written as a whole.
func Line(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	var b strings.Builder
	writeLast(&b, s)
	return b.String()
}

// Sanitize folds the bytes that would break a row apart (`|`, CR and LF) into `_`.
// It is lossy on purpose, the rule upstream applies to firewall names: names are shown
// to people, and two that differ only in those bytes are not worth a reversible
// encoding. It works byte by byte, so every other byte passes through as it was, invalid
// UTF-8 included; the output stream repairs that in one place (ValidUTF8).
func Sanitize(s string) string {
	if !strings.ContainsAny(s, "|\r\n") {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		switch c {
		case '|', '\r', '\n':
			b[i] = '_'
		}
	}
	return string(b)
}

func writeInner(b *strings.Builder, s string) {
	end := len(s)
	trailingBackslash := end > 0 && s[end-1] == '\\'
	if trailingBackslash {
		end--
	}
	for i := 0; i < end; i++ {
		switch c := s[i]; c {
		case '\r', '\n':
			b.WriteByte(' ')
		case '|':
			b.WriteString(`\|`)
		default:
			b.WriteByte(c)
		}
	}
	if trailingBackslash {
		b.WriteByte('/')
	}
}

func writeLast(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\r', '\n':
			b.WriteByte(' ')
		default:
			b.WriteByte(c)
		}
	}
}

// PrintableLines is Printable for each line of s: the line breaks stay, for a
// message of several lines shown to a person.
func PrintableLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Printable(l)
	}
	return strings.Join(lines, "\n")
}

// ValidUTF8 returns s with every invalid UTF-8 sequence replaced by U+FFFD. Rows travel
// in protobuf strings, which must be valid UTF-8; a file name or a line of a binary
// file need not be, and one such byte must not cost the command its answer.
func ValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// Printable makes s safe to show on a terminal or in a log line. Every character that
// could move a cursor, clear a screen, forge or break a line, or make text read other
// than it is stored becomes a visible escape: the C0 controls (a tab too: it passes for
// spaces), DEL and the C1 range as \xNN; the line and paragraph separators U+2028 and
// U+2029 and every invisible format character (Unicode category Cf: the bidi overrides
// and isolates that reverse a file name, zero-width spaces and joiners, the soft
// hyphen...) as \uNNNN (\UNNNNNNNN above U+FFFF). Invalid UTF-8 becomes U+FFFD. Text
// that needs none of this comes back unchanged, without copying.
func Printable(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s // ASCII printable: the common case, one byte loop
	}
	clean = true
	for _, r := range s {
		if r == utf8.RuneError || Hidden(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteString("\uFFFD")
		case r < 0x100 && Hidden(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff && Hidden(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		case Hidden(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Hidden reports whether r must not reach a terminal as itself (Printable escapes it):
// a C0 control (tab included), DEL, a C1 control, U+2028, U+2029, or an invisible
// format character (category Cf).
func Hidden(r rune) bool {
	switch {
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		return true
	case r < 0xa0:
		return false
	case r == 0x2028 || r == 0x2029:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// Split is the reader's side of Format: it cuts row into at most n fields (the kind
// counts as one), at each `|` that is not escaped as `\|`, and turns `\|` back into `|`
// in every field but the last, which is the rest of the row kept raw, as Format left
// it. n <= 0 cuts at every unescaped `|`. What Format folded (CR and LF into a space,
// an inner field's trailing `\` into `/`) cannot come back.
func Split(row string, n int) []string {
	var out []string
	var b strings.Builder
	start := 0 // where the field being read began in row
	for i := 0; i < len(row); i++ {
		if n > 0 && len(out) == n-1 {
			break
		}
		switch c := row[i]; {
		case c == '\\' && i+1 < len(row) && row[i+1] == '|':
			b.WriteByte('|')
			i++
		case c == '|':
			out = append(out, b.String())
			b.Reset()
			start = i + 1
		default:
			b.WriteByte(c)
		}
	}
	return append(out, row[start:])
}
