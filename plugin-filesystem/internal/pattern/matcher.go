package pattern

import "regexp"

// Matcher reports whether a regular expression finds a match in a text. It runs the
// lazy DFA (dfa.go) and goes on with Go's regexp, for good, when the DFA has no
// program for the expression or gives up; either way the answer is Go's. A Matcher
// keeps the DFA's cache between calls and is not safe for concurrent use.
type Matcher struct {
	re *regexp.Regexp
	d  *dfa // nil: Go's regexp
}

// NewMatcher returns a Matcher for re.
func NewMatcher(re *regexp.Regexp) *Matcher {
	return newMatcher(re, newDFAProg(re))
}

func newMatcher(re *regexp.Regexp, p *dfaProg) *Matcher {
	m := &Matcher{re: re}
	if p != nil {
		m.d = p.newDFA()
	}
	return m
}

// Match reports whether b contains a match of the expression.
func (m *Matcher) Match(b []byte) bool {
	if m.d != nil {
		if matched, ok := dfaMatch(m.d, b); ok {
			return matched
		}
		m.d = nil
	}
	return m.re.Match(b)
}

// MatchString reports whether s contains a match of the expression.
func (m *Matcher) MatchString(s string) bool {
	if m.d != nil {
		if matched, ok := dfaMatch(m.d, s); ok {
			return matched
		}
		m.d = nil
	}
	return m.re.MatchString(s)
}

// matchStream reports whether the rest of a long line contains a match.
func (m *Matcher) matchStream(ls *lineStream) bool {
	if m.d != nil {
		return m.d.matchStream(ls.next)
	}
	return m.re.MatchReader(ls)
}
