package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestPageLines(t *testing.T) {
	type got struct {
		n    int
		text string
		cut  bool
	}
	for _, c := range []struct {
		in            string
		offset, limit int
		want          []got
		total         int
	}{
		{"", 1, 10, nil, 0},
		{"a", 1, 10, []got{{1, "a", false}}, 1},
		{"a\r\nb\r\n", 1, 10, []got{{1, "a", false}, {2, "b", false}}, 2},
		{"a\r\r\n", 1, 10, []got{{1, "a\r", false}}, 1},
		{"a\nb\nc\nd", 2, 2, []got{{2, "b", false}, {3, "c", false}}, 4},
		{"a\nb\nc\nd\n", 4, 5, []got{{4, "d", false}}, 4},
		{"a\nb\n", 3, 5, nil, 2},
		{"a\nb\nc", 1, 1, []got{{1, "a", false}}, 3},
		{"a\x00b\nc", 1, 5, []got{{1, "a", false}, {2, "c", false}}, 2},
		{"\n\n\n", 2, 1, []got{{2, "", false}}, 3},
	} {
		for _, one := range []bool{false, true} {
			var gotRows []got
			var r = iotestReader(c.in, one)
			total, err := pageLines(context.Background(), r, c.offset, c.limit, func(n int, text []byte, cut bool) {
				gotRows = append(gotRows, got{n, string(text), cut})
			})
			if err != nil || total != c.total || fmt.Sprint(gotRows) != fmt.Sprint(c.want) {
				t.Errorf("%q (%d,%d, byte by byte %v): %v %d %v, want %v %d", c.in, c.offset, c.limit, one, gotRows, total, err, c.want, c.total)
			}
		}
	}
	// A cancelled context stops the read.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := pageLines(ctx, strings.NewReader("a\n"), 1, 1, func(int, []byte, bool) {}); err == nil {
		t.Error("no error after cancellation")
	}
}

func iotestReader(s string, oneByte bool) io.Reader {
	if oneByte {
		return iotest.OneByteReader(strings.NewReader(s))
	}
	return bytes.NewReader([]byte(s))
}

// lookLinesReference is the line model written the obvious way, holding the whole
// text: split on newlines, no extra line after a final newline, one trailing CR
// removed, the text cut at a NUL and at maxLineBytes.
func lookLinesReference(in string) []string {
	if in == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(in, "\n"), "\n")
	for i, l := range lines {
		l = strings.TrimSuffix(l, "\r")
		if len(l) > maxLineBytes {
			l = l[:maxLineBytes]
		}
		if j := strings.IndexByte(l, 0); j >= 0 {
			l = l[:j]
		}
		lines[i] = l
	}
	return lines
}

func FuzzPageLines(f *testing.F) {
	f.Add("a\r\nb\n\nc\r", 1, 10)
	f.Add("\n\n\r\n", 2, 1)
	f.Add("x\x00y\nz", 1, 1)
	f.Fuzz(func(t *testing.T, in string, offset, limit int) {
		offset = min(max(offset, 1), 1<<20)
		limit = min(max(limit, 1), 10000)
		all := lookLinesReference(in)
		var got []string
		total, err := pageLines(context.Background(), iotest.HalfReader(strings.NewReader(in)), offset, limit,
			func(n int, text []byte, _ bool) {
				if n != offset+len(got) {
					t.Fatalf("line %d out of order", n)
				}
				got = append(got, string(text))
			})
		if err != nil || total != len(all) {
			t.Fatalf("total %d (%v), want %d", total, err, len(all))
		}
		var want []string
		if offset <= len(all) {
			want = all[offset-1 : min(len(all), offset-1+limit)]
		}
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}
