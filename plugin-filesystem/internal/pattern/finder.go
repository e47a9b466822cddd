package pattern

import "bytes"

// finder locates a byte string, exactly or with ASCII case folding.
//
// Exact search looks for the pattern's rarest byte (by a fixed ranking of how common
// bytes are in text and logs) with the runtime's vectorised IndexByte and checks the
// pattern around each hit. bytes.Index keys on the first byte instead, which costs
// twice as much when that byte is common ("disk" in a log full of "dur=" and "id=").
// When the chosen byte turns out to be common in this text, the rest is searched with
// bytes.Index.
//
// The folded search keys on a rare byte the same way. A letter is looked for in both
// cases, by two IndexByte scans that take turns block by block (indexFold), so it
// costs about one more vectorised pass over the text, not a byte-by-byte loop; a byte
// that is not a letter needs one scan. When the byte turns out common here, the rest
// is searched with Horspool's algorithm over a skip table holding both cases of
// every pattern byte. Neither needs a lower-cased copy of a 100 MiB text.
type finder struct {
	pat     []byte // lower-cased when fold is set
	fold    bool
	rare    byte // the pattern byte the search keys on (lower case when folded)
	rare2   byte // with fold: its upper case, or rare again when it is not a letter
	rareOff int  // its offset in pat
	skip    [256]int
}

func newFinder(pat []byte, fold bool) *finder {
	f := &finder{pat: pat, fold: fold}
	if !fold {
		for i, c := range pat {
			if i == 0 || byteRank[c] < byteRank[f.rare] {
				f.rare, f.rareOff = c, i
			}
		}
		return f
	}
	f.pat = toLowerASCII(pat)
	// A letter costs both its cases: it is as common as the commoner of the two,
	// and it takes a second scan, so a byte that is not a letter wins a tie.
	best := -1
	for i, c := range f.pat {
		u := upperASCII[c]
		r := max(int(byteRank[c]), int(byteRank[u]))
		if u != c {
			r++
		}
		if best < 0 || r < best {
			best, f.rare, f.rare2, f.rareOff = r, c, u, i
		}
	}
	m := len(f.pat)
	for i := range f.skip {
		f.skip[i] = m
	}
	for i := 0; i < m-1; i++ {
		d := m - 1 - i
		f.skip[f.pat[i]] = d
		f.skip[upperASCII[f.pat[i]]] = d
	}
	return f
}

// index returns the offset of the first occurrence in s, or -1.
func (f *finder) index(s []byte) int {
	if !f.fold {
		return f.indexExact(s)
	}
	return f.indexFold(s)
}

// foldBlockMin and foldBlockMax bound the stretch of text the two IndexByte scans of
// a folded search cover before taking turns. A call that finds its hit early wastes
// at most a small block on the other case; a long search grows the block so the
// calls cost nothing next to the scan.
const (
	foldBlockMin = 512
	foldBlockMax = 64 << 10
)

func (f *finder) indexFold(s []byte) int {
	m := len(f.pat)
	if m < 2 || len(s) < m {
		return f.horspool(s)
	}
	last := len(s) - m // last possible start
	off := f.rareOff
	misses := 0
	for start, block := 0, foldBlockMin; start <= last; block = min(2*block, foldBlockMax) {
		end := min(last, start+block-1) // starts start..end are looked at in this turn
		win := s[start+off : end+off+1]
		a := bytes.IndexByte(win, f.rare)
		b := -1
		if f.rare2 != f.rare {
			b = bytes.IndexByte(win, f.rare2)
		}
		for a >= 0 || b >= 0 {
			j := a
			if a < 0 || (b >= 0 && b < a) {
				j = b
			}
			if equalFoldASCII(s[start+j:start+j+m], f.pat) {
				return start + j
			}
			// Too many false hits for the bytes covered: the byte is common here.
			if misses++; misses > 32 && misses > (start+j)>>6 {
				if k := f.horspool(s[start+j+1:]); k >= 0 {
					return start + j + 1 + k
				}
				return -1
			}
			if j == a {
				a = nextByte(win, a, f.rare)
			} else {
				b = nextByte(win, b, f.rare2)
			}
		}
		start = end + 1
	}
	return -1
}

// nextByte returns the offset of the next c in win after offset i, or -1.
func nextByte(win []byte, i int, c byte) int {
	if k := bytes.IndexByte(win[i+1:], c); k >= 0 {
		return i + 1 + k
	}
	return -1
}

// equalFoldASCII reports whether s equals the lower-cased lower with ASCII letters
// of s folded.
func equalFoldASCII(s, lower []byte) bool {
	for i, c := range lower {
		if lowerASCII[s[i]] != c {
			return false
		}
	}
	return true
}

// horspool is the folded search without a key byte.
func (f *finder) horspool(s []byte) int {
	m := len(f.pat)
	if m == 0 {
		return 0
	}
	last := m - 1
	for i := 0; i+m <= len(s); {
		j := last
		for j >= 0 && lowerASCII[s[i+j]] == f.pat[j] {
			j--
		}
		if j < 0 {
			return i
		}
		i += f.skip[s[i+last]]
	}
	return -1
}

var lowerASCII, upperASCII [256]byte

func init() {
	for i := range lowerASCII {
		b := byte(i)
		lowerASCII[i], upperASCII[i] = b, b
		if 'A' <= b && b <= 'Z' {
			lowerASCII[i] = b + 'a' - 'A'
		}
		if 'a' <= b && b <= 'z' {
			upperASCII[i] = b - ('a' - 'A')
		}
	}
}

func toLowerASCII(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = lowerASCII[c]
	}
	return out
}

func (f *finder) indexExact(s []byte) int {
	m := len(f.pat)
	if m < 2 || len(s) < m {
		return bytes.Index(s, f.pat)
	}
	last := len(s) - m // last possible start
	misses := 0
	for start := 0; start <= last; {
		j := bytes.IndexByte(s[start+f.rareOff:last+f.rareOff+1], f.rare)
		if j < 0 {
			return -1
		}
		start += j
		if bytes.Equal(s[start:start+m], f.pat) {
			return start
		}
		start++
		// Too many false hits for the bytes covered: the byte is common here.
		if misses++; misses > 32 && misses > start>>6 {
			if k := bytes.Index(s[start:], f.pat); k >= 0 {
				return start + k
			}
			return -1
		}
	}
	return -1
}

// byteRank orders bytes from rare (low) to common (high) in typical text, logs and
// configuration files. Only the order matters.
var byteRank = func() [256]uint8 {
	var r [256]uint8
	for i := range r {
		switch c := byte(i); {
		case c >= 0x80:
			r[i] = 20 // UTF-8 bytes: frequent in some texts, absent in most logs
		case c < 0x20:
			r[i] = 10
		default:
			r[i] = 60 // uncommon punctuation
		}
	}
	set := func(rank uint8, chars string) {
		for i := 0; i < len(chars); i++ {
			r[chars[i]] = rank
		}
	}
	for i, c := range "QJXZKVWYBGPFMUCDHLRSNIOATE" {
		r[c] = uint8(70 + i) // capitals, rarest first
	}
	for i, c := range "qjzxkvbywgpfmuclhdrsnioate" {
		r[c] = uint8(150 + 3*i) // lower case, rarest first
	}
	set(120, "0123456789")
	set(140, ".,:;-_/=\"'()[]")
	set(200, "\t\n")
	set(255, " ")
	return r
}()
