package pattern

// GlobMatch reports whether name matches pattern as a whole, byte by byte and
// case-sensitively.
//
// In the pattern, '?' matches exactly one byte, '*' matches any run of bytes
// (including none), and '[...]' matches one byte from a class of literal bytes and
// 'x-y' byte ranges, negated when it starts with '!'. '^' is an ordinary member, not a
// negation marker. A class ends at the first ']' after its opening bracket, so ']'
// can never be a member; '[]' matches nothing and '[!]' matches any byte. A '[' with
// no closing ']' takes the rest of the pattern as its class. There is no escape
// character: every other byte matches itself. An empty pattern matches only an empty
// name.
//
// The matcher keeps a single backtrack point (the most recent '*'), which is enough
// because every other pattern element consumes exactly one byte. Its worst case is
// proportional to len(pattern)*len(name); a hostile pattern cannot make it
// exponential.
func GlobMatch(pattern, name string) bool {
	ok, _ := globMatch(pattern, name)
	return ok
}

// globMatch is GlobMatch that also returns how many pattern elements it examined, so
// a test can check the cost bound rather than a wall-clock time.
func globMatch(pattern, name string) (bool, int) {
	steps := 0
	p, n := 0, 0
	star := -1  // index of the last '*' seen in pattern, or -1
	resume := 0 // position in name the last '*' is currently assumed to stop at
	for n < len(name) {
		steps++
		if p < len(pattern) {
			switch c := pattern[p]; c {
			case '*':
				star = p
				resume = n
				p++
				continue
			case '?':
				p++
				n++
				continue
			case '[':
				if ok, next := matchClass(pattern, p, name[n]); ok {
					p = next
					n++
					continue
				}
			default:
				if c == name[n] {
					p++
					n++
					continue
				}
			}
		}
		if star < 0 {
			return false, steps
		}
		// Let the last '*' swallow one more byte and retry from just after it.
		resume++
		n = resume
		p = star + 1
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
		steps++
	}
	return p == len(pattern), steps
}

// matchClass reports whether c belongs to the class whose '[' is at pattern[open],
// and returns the index just past the class.
func matchClass(pattern string, open int, c byte) (bool, int) {
	i := open + 1
	negate := false
	if i < len(pattern) && pattern[i] == '!' {
		negate = true
		i++
	}
	in := false
	for i < len(pattern) && pattern[i] != ']' {
		lo := pattern[i]
		if i+2 < len(pattern) && pattern[i+1] == '-' && pattern[i+2] != ']' {
			if lo <= c && c <= pattern[i+2] {
				in = true
			}
			i += 3
			continue
		}
		if c == lo {
			in = true
		}
		i++
	}
	if i < len(pattern) {
		i++ // the closing ']'
	}
	return in != negate, i
}
