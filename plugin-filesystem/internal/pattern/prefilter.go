package pattern

import (
	"regexp"
	"regexp/syntax"
	"unicode"
	"unicode/utf8"
)

// requiredLiteral returns a byte string that every match of re must contain, and
// whether it is to be looked for with ASCII case folding. ok is false when the pattern
// has no literal that can serve (an alternation at the top, only character classes,
// a case-folded letter whose folding leaves ASCII).
//
// The searcher uses the literal to skip, with a vectorised scan, every line that
// cannot match, so the regular expression only runs on candidate lines. The literal
// must therefore never miss a line the pattern matches: it is taken only from parts
// of the pattern every match passes through.
func requiredLiteral(re *regexp.Regexp) (lit []byte, fold, ok bool) {
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return nil, false, false
	}
	runes, fold := required(tree)
	if len(runes) == 0 {
		return nil, false, false
	}
	for _, r := range runes {
		// Go's matcher reads a malformed byte as U+FFFD, so a literal U+FFFD in the
		// pattern matches bytes that are not its UTF-8 encoding.
		if r == utf8.RuneError {
			return nil, false, false
		}
	}
	if !fold {
		return []byte(string(runes)), false, true
	}
	out := make([]byte, 0, len(runes))
	for _, r := range runes {
		if !foldsWithinASCII(r) {
			return nil, false, false
		}
		out = append(out, lowerASCII[byte(r)])
	}
	return out, true, true
}

// required returns the longest literal that every match of re contains.
func required(re *syntax.Regexp) ([]rune, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return re.Rune, re.Flags&syntax.FoldCase != 0
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpConcat:
		var best []rune
		bestFold := false
		bestLen := 0
		for _, sub := range re.Sub {
			lit, fold := required(sub)
			n := len(string(lit))
			// Prefer the longer literal; at equal length prefer an exact one, which
			// the searcher finds faster.
			if n > bestLen || (n == bestLen && n > 0 && bestFold && !fold) {
				best, bestFold, bestLen = lit, fold, n
			}
		}
		return best, bestFold
	}
	return nil, false
}

// foldsWithinASCII reports whether r is ASCII and every character that matches it
// under case folding is ASCII too. 'k' fails (KELVIN SIGN folds to it), as does 's'
// (LATIN SMALL LETTER LONG S).
func foldsWithinASCII(r rune) bool {
	if r >= utf8.RuneSelf {
		return false
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
