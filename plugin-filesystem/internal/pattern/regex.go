package pattern

import (
	"regexp"
	"regexp/syntax"
	"strings"
)

// MaxPatternLen is the longest regular expression, in bytes, that the search,
// search_dir and replace actions accept.
const MaxPatternLen = 256

// CompileError is the error Compile and CompileName return for a pattern the engine
// cannot compile. Its message is the engine's own description without Go's
// "error parsing regexp: " prefix, so a caller can print "invalid regex: " followed by
// it. Patterns that need backreferences or lookaround fail here, because Go's engine
// guarantees linear-time matching and has neither.
type CompileError struct {
	Err *syntax.Error
}

func (e *CompileError) Error() string {
	return e.Err.Code.String() + ": `" + e.Err.Expr + "`"
}

func (e *CompileError) Unwrap() error { return e.Err }

// Compile compiles a pattern for the search action (matched against one line at a
// time, anywhere in the line) and the replace action (matched against the whole file).
//
// The engine is Go's RE2, so the syntax is RE2's. Where RE2 and the ECMAScript grammar
// of the upstream agent mean different things for the same text, Compile keeps the
// ECMAScript meaning for what real patterns rely on:
//
//   - '.' matches any character except the line terminators \n, \r, U+2028 and U+2029.
//     RE2's '.' matches \r, which would let "key=.*" eat the \r of a CRLF line in a
//     whole-file replace and silently turn the file's line endings into bare LF.
//   - \uXXXX is accepted and means the code point XXXX (RE2 spells it \x{XXXX}).
//   - '^' and '$' anchor the start and end of the text only (RE2 without the m flag
//     behaves the same; '$' does not match before a final newline).
//
// caseInsensitive folds case with Unicode simple folding, as RE2's i flag does. The
// remaining differences (no backreferences, no lookaround, RE2-only syntax such as
// (?i) or [[:alpha:]] being accepted, \s not matching \v) are listed in
// docs/filesystem.md.
func Compile(pattern string, caseInsensitive bool) (*regexp.Regexp, error) {
	return compile(pattern, caseInsensitive, false)
}

// CompileName compiles a pattern for the search_dir action: case-sensitive, and it
// must match an entry name as a whole, not just part of it. The same ECMAScript
// adjustments as Compile apply.
func CompileName(pattern string) (*regexp.Regexp, error) {
	return compile(pattern, false, true)
}

func compile(pattern string, fold, whole bool) (*regexp.Regexp, error) {
	src := translateEscapes(pattern)
	flags := syntax.Perl
	if fold {
		flags |= syntax.FoldCase
	}
	tree, err := syntax.Parse(src, flags)
	if err != nil {
		if se, ok := err.(*syntax.Error); ok {
			return nil, &CompileError{Err: se}
		}
		return nil, err
	}
	// Only go through the printed syntax tree when something had to change; otherwise
	// the pattern compiles from the text the user wrote.
	switch {
	case restrictDot(tree):
		src = tree.String() // the tree carries the fold flag on its literals and classes
	case fold:
		src = "(?i)" + src
	}
	if whole {
		src = `\A(?:` + src + `)\z`
	}
	re, err := regexp.Compile(src)
	if err != nil {
		if se, ok := err.(*syntax.Error); ok {
			return nil, &CompileError{Err: se}
		}
		return nil, err
	}
	return re, nil
}

// notLineTerminator is the character class ECMAScript's '.' stands for.
var notLineTerminator = []rune{
	0, '\n' - 1,
	'\n' + 1, '\r' - 1,
	'\r' + 1, 0x2027,
	0x202A, 0x10FFFF,
}

// restrictDot replaces every "any character but newline" node with the ECMAScript
// class, in place, and reports whether it changed anything. A '.' written under the s
// flag (RE2 syntax, not ECMAScript) keeps matching everything.
func restrictDot(re *syntax.Regexp) bool {
	changed := false
	if re.Op == syntax.OpAnyCharNotNL {
		re.Op = syntax.OpCharClass
		re.Rune = append([]rune(nil), notLineTerminator...)
		changed = true
	}
	for _, sub := range re.Sub {
		if restrictDot(sub) {
			changed = true
		}
	}
	return changed
}

// translateEscapes rewrites the ECMAScript escape \uXXXX into RE2's \x{XXXX}, leaving
// every other escape (and an escaped backslash followed by 'u') untouched.
func translateEscapes(p string) string {
	if !strings.Contains(p, `\u`) {
		return p
	}
	var b strings.Builder
	b.Grow(len(p) + 8)
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c != '\\' || i+1 >= len(p) {
			b.WriteByte(c)
			continue
		}
		if p[i+1] == 'u' && i+6 <= len(p) && isHex4(p[i+2:i+6]) {
			b.WriteString(`\x{`)
			b.WriteString(p[i+2 : i+6])
			b.WriteByte('}')
			i += 5
			continue
		}
		b.WriteByte(c)
		b.WriteByte(p[i+1])
		i++
	}
	return b.String()
}

func isHex4(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return len(s) == 4
}
