package pattern

// HasNestedQuantifiers reports whether a regular expression puts a quantifier right
// after a group that itself ends in a quantifier, such as "(a+)+" or "(a*){2}": the
// classic shape of catastrophic backtracking. The search, search_dir and replace
// actions refuse such patterns.
//
// The check is deliberately the simple one users of the upstream agent know, kept
// identical so the same content is accepted and refused the same way: one left-to-right
// scan remembering only whether the previous character was a quantifier. A backslash
// hides the character after it; '(' resets the memory; ')' followed by '+', '*', '?' or
// '{' is refused when the character before it was a quantifier. '}' counts as a
// quantifier when a '{' appears anywhere earlier in the pattern. Character classes get
// no special treatment, and only the character directly before ')' matters, so
// "((a+))+" is not caught. Go's engine does not backtrack, so this guard protects
// compatibility rather than the agent.
func HasNestedQuantifiers(pattern string) bool {
	lastWasQuantifier := false
	seenOpenBrace := false // a '{' occurs before the current position
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case c == '\\' && i+1 < len(pattern):
			if pattern[i+1] == '{' {
				seenOpenBrace = true // an escaped '{' is still "earlier in the pattern"
			}
			i++
			lastWasQuantifier = false
		case c == '(':
			lastWasQuantifier = false
		case c == ')':
			if i+1 < len(pattern) && lastWasQuantifier {
				switch pattern[i+1] {
				case '+', '*', '?', '{':
					return true
				}
			}
			lastWasQuantifier = false
		default:
			lastWasQuantifier = c == '+' || c == '*' || c == '?' || (c == '}' && seenOpenBrace)
		}
		if c == '{' {
			seenOpenBrace = true
		}
	}
	return false
}
