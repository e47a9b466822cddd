// Package words splits a typed line into words as a POSIX shell splits a command's
// arguments. The agent's shell (yuzu-agent shell) and the test fleet server's console
// (yuzu-testserver) read their lines with it, so both quote as exec's arguments do.
package words

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// Split splits one line into words the way a POSIX shell splits exec's
// arguments, so that a line can be pasted from a command line and back: blanks
// separate words; '...' keeps everything literally; "..." keeps everything but
// lets a backslash escape " and \; outside quotes a backslash escapes any
// character. Quotes may make an empty word (value=""). A line that is not valid
// UTF-8, or whose quote or escape is left open, is refused.
func Split(line string) ([]string, error) {
	if !utf8.ValidString(line) {
		return nil, errors.New("the line is not valid UTF-8")
	}
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\\':
			if i+1 >= len(line) {
				return nil, errors.New("the line ends with a lone backslash")
			}
			i++
			w.WriteByte(line[i])
			inWord = true
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("a ' quote is not closed")
			}
			w.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			closed := false
			for i++; i < len(line); i++ {
				if line[i] == '"' {
					closed = true
					break
				}
				if line[i] == '\\' && i+1 < len(line) && (line[i+1] == '"' || line[i+1] == '\\') {
					i++
				}
				w.WriteByte(line[i])
			}
			if !closed {
				return nil, errors.New(`a " quote is not closed`)
			}
			inWord = true
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}
