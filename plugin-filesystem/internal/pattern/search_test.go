package pattern

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

type hit struct {
	Line      int
	Text      string
	Truncated bool
}

func collect(t *testing.T, s *Searcher, r io.Reader, max int) []hit {
	t.Helper()
	var got []hit
	n, err := s.Search(context.Background(), r, max, func(m Match) error {
		got = append(got, hit{m.Line, string(m.Text), m.Truncated})
		return nil
	})
	if err != nil {
		t.Fatalf("Search: %v", err)
	}
	if n != len(got) {
		t.Fatalf("Search returned %d, callback saw %d", n, len(got))
	}
	return got
}

func TestSearchLinuxHosts(t *testing.T) {
	hosts := "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::\tip6-localnet\n" +
		"ff00::\tip6-mcastprefix\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n172.17.0.3\tyuzu-capture-host\n"
	want := []hit{{1, "127.0.0.1\tlocalhost", false}, {2, "::1\tlocalhost ip6-localhost ip6-loopback", false}}
	if got := collect(t, NewLiteralSearcher("localhost", false), strings.NewReader(hosts), 100); !reflect.DeepEqual(got, want) {
		t.Errorf("literal: %+v", got)
	}
	re, _ := Compile(`\tlocal\w+$`, false)
	if got := collect(t, NewRegexSearcher(re), strings.NewReader(hosts), 100); !reflect.DeepEqual(got, want[:1]) {
		t.Errorf("regex: %+v", got)
	}
}

func TestSearchLineModel(t *testing.T) {
	tests := []struct {
		name, text, pattern string
		regex, fold         bool
		max                 int
		want                []hit
	}{
		{"empty text has no lines", "", "", false, false, 0, nil},
		{"one empty line", "\n", "", false, false, 0, []hit{{1, "", false}}},
		{"trailing newline adds no line", "a\n", "", false, false, 0, []hit{{1, "a", false}}},
		{"three lines", "a\n\nb", "", false, false, 0, []hit{{1, "a", false}, {2, "", false}, {3, "b", false}}},
		{"CRLF stripped", "x\r\ny\r\n", "x", false, false, 0, []hit{{1, "x", false}}},
		{"only one CR stripped", "x\r\r\n", "x\r", false, false, 0, []hit{{1, "x\r", false}}},
		{"pattern cannot reach the stripped CR", "x\r\nx\r", "x\r", false, false, 0, nil},
		{"interior CR kept", "a\rb\n", "a\rb", false, false, 0, []hit{{1, "a\rb", false}}},
		{"newline in literal never matches", "a\nb\n", "a\nb", false, false, 0, nil},
		{"max stops", "a\na\na\n", "a", false, false, 2, []hit{{1, "a", false}, {2, "a", false}}},
		{"one row per line", "aaa\n", "a", false, false, 0, []hit{{1, "aaa", false}}},
		{"ascii fold", "Hello\nHELLO\nhello\nhelo\n", "hello", false, true, 0,
			[]hit{{1, "Hello", false}, {2, "HELLO", false}, {3, "hello", false}}},
		{"fold is ASCII only", "ÉCOLE\nécole\n", "école", false, true, 0, []hit{{2, "école", false}}},
		{"regex anchors the line", "ab\nb\n", "^b$", true, false, 0, []hit{{2, "b", false}}},
		{"regex dollar before stripped CR", "ab\r\n", "b$", true, false, 0, []hit{{1, "ab", false}}},
		{"regex with required literal", "error 1\nwarn 2\nerror x\n", `error \d`, true, false, 0, []hit{{1, "error 1", false}}},
		{"regex empty match on every line", "a\n\nb", "", true, false, 0, []hit{{1, "a", false}, {2, "", false}, {3, "b", false}}},
		{"regex case-insensitive", "FOO\nbar\n", "foo", true, true, 0, []hit{{1, "FOO", false}}},
		{"binary bytes are plain bytes", "\x00\xff\n\xffx\n", "\xffx", false, false, 0, []hit{{2, "\xffx", false}}},
	}
	for _, tc := range tests {
		var s *Searcher
		if tc.regex {
			re, err := Compile(tc.pattern, tc.fold)
			if err != nil {
				t.Fatal(err)
			}
			s = NewRegexSearcher(re)
		} else {
			s = NewLiteralSearcher(tc.pattern, tc.fold)
		}
		if got := collect(t, s, strings.NewReader(tc.text), tc.max); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestSearchLongLines(t *testing.T) {
	long := strings.Repeat("x", 100) + "NEEDLE" + strings.Repeat("y", 100)
	text := "short NEEDLE\n" + long + "\r\n" + "tail NEEDLE"
	for _, mode := range []string{"literal", "regex", "regex-no-literal"} {
		var s *Searcher
		switch mode {
		case "literal":
			s = NewLiteralSearcher("NEEDLE", false)
		case "regex":
			s = NewRegexSearcher(mustCompile(t, `NEE+DLE`))
		default:
			s = NewRegexSearcher(mustCompile(t, `[N][E]{2}DLE`))
		}
		s.bufSize = 32
		got := collect(t, s, strings.NewReader(text), 0)
		want := []hit{{1, "short NEEDLE", false}, {2, long[:32], true}, {3, "tail NEEDLE", false}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", mode, got, want)
		}
	}
	// A match that ends exactly at a long line's hidden '\r' does not count.
	s := NewLiteralSearcher("yy\r", false)
	s.bufSize = 16
	if got := collect(t, s, strings.NewReader(long+"\r\nnext\n"), 0); got != nil {
		t.Errorf("match across the stripped CR of a long line: %+v", got)
	}
	// A line exactly as long as the buffer is not truncated.
	s = NewLiteralSearcher("a", false)
	s.bufSize = 8
	if got := collect(t, s, strings.NewReader("aaaaaaaa\r\nbbbbbbbb"), 0); !reflect.DeepEqual(got, []hit{{1, "aaaaaaaa", false}}) {
		t.Errorf("line of exactly the buffer size: %+v", got)
	}
}

// TestSearchDifferential compares the searcher with a plain reading of the line model
// on random texts, tiny buffers (so lines straddle reads and overflow the buffer) and
// readers that return one byte, half a buffer, or data with EOF at once.
func TestSearchDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "A", "B", "ab", "\r", "\n", "\r\n", "é", "\xff", "x"}
	patterns := []struct {
		p     string
		regex bool
	}{
		{"a", false}, {"ab", false}, {"bA", false}, {"a\r", false}, {"", false}, {"aab", false},
		{"ab+", true}, {"^a", true}, {"b$", true}, {"a.b", true}, {"é", true}, {"[ab]{3}", true},
		{"(?i)ab", true}, {"x|y", true}, {`\bab`, true},
	}
	wrap := []func(io.Reader) io.Reader{
		func(r io.Reader) io.Reader { return r },
		iotest.OneByteReader, iotest.HalfReader, iotest.DataErrReader,
	}
	for iter := 0; iter < 3000; iter++ {
		var sb strings.Builder
		for n := rng.IntN(60); n > 0; n-- {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		text := sb.String()
		pc := patterns[rng.IntN(len(patterns))]
		fold := rng.IntN(2) == 0
		var s *Searcher
		var match func([]byte) bool
		if pc.regex {
			re, err := Compile(pc.p, fold)
			if err != nil {
				t.Fatal(err)
			}
			s = NewRegexSearcher(re)
			match = re.Match
		} else {
			s = NewLiteralSearcher(pc.p, fold)
			match = func(line []byte) bool {
				if fold {
					return bytes.Contains(toLowerASCII(line), toLowerASCII([]byte(pc.p)))
				}
				return bytes.Contains(line, []byte(pc.p))
			}
		}
		s.bufSize = 1 + rng.IntN(12)
		max := rng.IntN(4)
		want := referenceSearch(text, match, max, s.bufSize)
		r := wrap[rng.IntN(len(wrap))](strings.NewReader(text))
		got := collect(t, s, r, max)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("text %q pattern %q regex=%v fold=%v buf=%d max=%d:\n got %+v\nwant %+v",
				text, pc.p, pc.regex, fold, s.bufSize, max, got, want)
		}
	}
}

// referenceSearch applies the line model to the whole text at once.
func referenceSearch(text string, match func([]byte) bool, max, bufSize int) []hit {
	if text == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	var out []hit
	for i, raw := range lines {
		line := strings.TrimSuffix(raw, "\r")
		if !match([]byte(line)) {
			continue
		}
		h := hit{Line: i + 1, Text: line}
		if len(line) > bufSize {
			h.Text, h.Truncated = raw[:bufSize], true
		}
		out = append(out, h)
		if max > 0 && len(out) == max {
			break
		}
	}
	return out
}

func TestSearchStops(t *testing.T) {
	text := strings.Repeat("match\n", 1000)
	stopErr := errors.New("stop")
	calls := 0
	n, err := NewLiteralSearcher("match", false).Search(context.Background(), strings.NewReader(text), 0,
		func(Match) error {
			calls++
			if calls == 3 {
				return stopErr
			}
			return nil
		})
	if !errors.Is(err, stopErr) || n != 3 {
		t.Errorf("callback error: n=%d err=%v", n, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewLiteralSearcher("match", false).Search(ctx, strings.NewReader(text), 0,
		func(Match) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err = %v", err)
	}

	readErr := errors.New("disk on fire")
	r := io.MultiReader(strings.NewReader("match\n"), iotest.ErrReader(readErr))
	if _, err := NewLiteralSearcher("match", false).Search(context.Background(), r, 0,
		func(Match) error { return nil }); !errors.Is(err, readErr) {
		t.Errorf("read error: err = %v", err)
	}

	// A read error in the middle of an over-long line is reported, not taken as the
	// end of the line.
	s := NewRegexSearcher(mustCompile(t, "x+$"))
	s.bufSize = 4
	r = io.MultiReader(strings.NewReader("xxxxxxxx"), iotest.ErrReader(readErr))
	if _, err := s.Search(context.Background(), r, 0, func(m Match) error {
		t.Errorf("unexpected match %+v", m)
		return nil
	}); !errors.Is(err, readErr) {
		t.Errorf("read error in a long line: err = %v", err)
	}

	zero := readerFunc(func([]byte) (int, error) { return 0, nil })
	if _, err := NewLiteralSearcher("x", false).Search(context.Background(), zero, 0,
		func(Match) error { return nil }); !errors.Is(err, io.ErrNoProgress) {
		t.Errorf("reader without progress: err = %v", err)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func TestSearchLargeLineBoundedMemory(t *testing.T) {
	// A 64 MiB line streamed from a generator: the searcher must find the needle at
	// its very end while holding only its buffers.
	const size = 64 << 20
	gen := &patternReader{size: size, tail: "NEEDLE"}
	s := NewLiteralSearcher("NEEDLE", false)
	got := collect(t, s, gen, 0)
	if len(got) != 1 || got[0].Line != 1 || !got[0].Truncated || len(got[0].Text) != DefaultBufferSize {
		t.Fatalf("got %d hits: %+v", len(got), summary(got))
	}
}

// patternReader yields size bytes of 'z' followed by tail, without a newline.
type patternReader struct {
	size, off int
	tail      string
}

func (p *patternReader) Read(b []byte) (int, error) {
	total := p.size + len(p.tail)
	if p.off >= total {
		return 0, io.EOF
	}
	n := 0
	for n < len(b) && p.off < total {
		if p.off < p.size {
			k := min(len(b)-n, p.size-p.off)
			for i := range k {
				b[n+i] = 'z'
			}
			n += k
			p.off += k
			continue
		}
		b[n] = p.tail[p.off-p.size]
		n++
		p.off++
	}
	return n, nil
}

func summary(h []hit) string {
	var b strings.Builder
	for _, x := range h {
		fmt.Fprintf(&b, "{%d len=%d trunc=%v} ", x.Line, len(x.Text), x.Truncated)
	}
	return b.String()
}

func FuzzSearch(f *testing.F) {
	f.Add("a\r\nb\nab\r\r\n", "ab", false, false, uint8(3))
	f.Add("xx\nAB\n", "(?i)ab$", true, false, uint8(1))
	f.Add("\xff\xfe\n\xe2\x82\xac", ".", true, false, uint8(2))
	f.Fuzz(func(t *testing.T, text, pattern string, regex, fold bool, buf uint8) {
		if len(pattern) > MaxPatternLen {
			return
		}
		var s *Searcher
		var match func([]byte) bool
		if regex {
			re, err := Compile(pattern, fold)
			if err != nil {
				return
			}
			s, match = NewRegexSearcher(re), re.Match
		} else {
			s = NewLiteralSearcher(pattern, fold)
			pat := toLowerASCII([]byte(pattern))
			match = func(line []byte) bool {
				if fold {
					return bytes.Contains(toLowerASCII(line), pat)
				}
				return bytes.Contains(line, []byte(pattern))
			}
		}
		s.bufSize = 1 + int(buf)%64
		want := referenceSearch(text, match, 0, s.bufSize)
		got := collect(t, s, iotest.HalfReader(strings.NewReader(text)), 0)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("text %q pattern %q regex=%v fold=%v buf=%d:\n got %+v\nwant %+v",
				text, pattern, regex, fold, s.bufSize, got, want)
		}
	})
}
