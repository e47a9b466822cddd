package pattern

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestFinderExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := "aab kd\nZ"
	for iter := 0; iter < 20000; iter++ {
		var sb strings.Builder
		for n := rng.IntN(300); n > 0; n-- {
			sb.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		s := sb.String()
		var pb strings.Builder
		for n := rng.IntN(5); n > 0; n-- {
			pb.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		p := pb.String()
		f := newFinder([]byte(p), false)
		if got, want := f.index([]byte(s)), strings.Index(s, p); got != want {
			t.Fatalf("index(%q) of %q = %d, want %d", s, p, got, want)
		}
	}
	// The rare-byte guess is wrong on this text ('k' everywhere): the fallback to
	// bytes.Index must still find the one real hit at the end.
	s := []byte(strings.Repeat("kkkkkkkk", 1000) + "disk")
	if got := newFinder([]byte("disk"), false).index(s); got != len(s)-4 {
		t.Errorf("fallback: got %d", got)
	}
}

func TestFinderFold(t *testing.T) {
	tests := []struct {
		s, p string
		want int
	}{
		{"Hello World", "world", 6},
		{"HELLO", "hello", 0},
		{"xHeLlO", "HELLO", 1},
		{"hell", "hello", -1},
		{"École", "école", -1}, // non-ASCII bytes must match exactly
		{"école", "ÉCOLE", -1},
		{"aaaaab", "AAB", 3},
		{"", "", 0},
		{"abc", "", 0},
	}
	for _, tc := range tests {
		if got := newFinder([]byte(tc.p), true).index([]byte(tc.s)); got != tc.want {
			t.Errorf("fold index(%q, %q) = %d, want %d", tc.s, tc.p, got, tc.want)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := "aAbB xX"
	for iter := 0; iter < 20000; iter++ {
		var sb, pb strings.Builder
		for n := rng.IntN(200); n > 0; n-- {
			sb.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		for n := 1 + rng.IntN(4); n > 0; n-- {
			pb.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		s, p := sb.String(), pb.String()
		want := bytes.Index(bytes.ToLower([]byte(s)), bytes.ToLower([]byte(p)))
		if got := newFinder([]byte(p), true).index([]byte(s)); got != want {
			t.Fatalf("fold index(%q, %q) = %d, want %d", s, p, got, want)
		}
	}
}

// Texts longer than the folded search's blocks, the needle anywhere in any case, and
// texts where the key byte is everywhere (the Horspool fallback).
func TestFinderFoldLong(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	needles := []string{"error disk", "Kk", "k9", "--x", "ab", "ZZZZ", "q_Q", "é1a"}
	fills := []string{"info request id=42 ", "kkkkKKKK", "eeee", "x", "aAbB", "zZz-"}
	for iter := 0; iter < 300; iter++ {
		needle := needles[rng.IntN(len(needles))]
		fill := fills[rng.IntN(len(fills))]
		text := []byte(strings.Repeat(fill, 1+rng.IntN(40000)/len(fill)))
		for n := rng.IntN(3); n > 0; n-- {
			at := rng.IntN(len(text) + 1)
			ins := []byte(needle)
			for i := range ins {
				if rng.IntN(2) == 0 {
					ins[i] = upperASCII[ins[i]]
				}
			}
			text = append(text[:at], append(ins, text[at:]...)...)
		}
		want := bytes.Index(toLowerASCII(text), toLowerASCII([]byte(needle)))
		if got := newFinder([]byte(needle), true).index(text); got != want {
			t.Fatalf("fold index of %q in %d bytes of %q: %d, want %d", needle, len(text), fill, got, want)
		}
	}
}
