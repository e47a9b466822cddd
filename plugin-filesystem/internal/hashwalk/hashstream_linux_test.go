package hashwalk

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"testing"
)

// countingReader counts the Read calls a hasher makes.
type countingReader struct {
	r     io.Reader
	calls int
}

func (c *countingReader) Read(b []byte) (int, error) {
	c.calls++
	return c.r.Read(b)
}

func (*countingReader) Close() error { return nil }

// TestHashStreamStopsAtKnownSize: a file is read up to the size judged on its
// descriptor and no further, except that a digest equal to the target is
// confirmed by one more read, so a prefix of a grown file is never a match.
func TestHashStreamStopsAtKnownSize(t *testing.T) {
	data := []byte("abcdef")
	cases := []struct {
		name    string
		size    int64
		target  string
		reads   int
		matches []Match
	}{
		{"whole file, no match: one read, none at the end", 6, hexSHA([]byte("zzz")), 1, nil},
		{"whole file, match: one more read meets the end", 6, hexSHA(data), 2, []Match{{"/x", 6}}},
		{"grew after judging, prefix equals the target: read on, no match", 3, hexSHA(data[:3]), 3, nil},
		{"grew after judging, no match on the judged part", 3, hexSHA(data), 1, nil},
		{"shrank after judging: read to the end, digest of what is there", 10, hexSHA(data), 2, []Match{{"/x", 6}}},
		{"unknown size: read to the end", -1, hexSHA(data), 2, []Match{{"/x", 6}}},
		{"empty file matches the empty digest", 0, emptySHA, 1, []Match{{"/x", 0}}},
		{"size zero is read to the end", 0, hexSHA(data), 2, []Match{{"/x", 6}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(Request{SHA256: tc.target, MaxDepth: 1, Bounds: DefaultBounds()})
			content := data
			if tc.target == emptySHA {
				content = nil
			}
			cr := &countingReader{r: bytes.NewReader(content)}
			e.hashFile(&job{r: cr, size: tc.size, dir: "/x"}, make([]byte, 64), sha256.New(), nil)
			r := e.result()
			if cr.calls != tc.reads || fmt.Sprint(r.Matches) != fmt.Sprint(tc.matches) {
				t.Fatalf("reads %d (want %d), matches %v (want %v)", cr.calls, tc.reads, r.Matches, tc.matches)
			}
		})
	}
}

// TestWalkInlineHashing walks a tree with one and with a few hashers, so the
// walker, finding the queue full, hashes many files itself, and checks that
// the answer is the same either way.
func TestWalkInlineHashing(t *testing.T) {
	root := canonTemp(t)
	var want []Match
	for i := range 300 {
		p := filepath.Join(root, fmt.Sprintf("d%d", i%7), fmt.Sprintf("f%03d", i))
		data := bytes.Repeat([]byte{byte('0' + i%10)}, 3000+i%10)
		writeFile(t, p, data)
		if i%10 == 3 {
			want = append(want, Match{p, int64(len(data))})
		}
	}
	sort.Slice(want, func(a, b int) bool { return want[a].Path < want[b].Path })
	for _, workers := range []int{1, 2, 8} {
		req := request(root, hexSHA(bytes.Repeat([]byte{'3'}, 3003)))
		req.Workers = workers
		r := mustWalk(t, context.Background(), req)
		if r.Reason != ReasonNone || r.SkippedUnreadable != 0 || r.Hashed != 300*3000+30*45 ||
			fmt.Sprint(r.Matches) != fmt.Sprint(want) {
			t.Fatalf("workers %d: %+v, want matches %v", workers, r, want)
		}
	}
}
