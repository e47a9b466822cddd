package journal

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// appendedJournal writes a journal in dir whose only segment holds three flushes,
// the first written whole and the others appended: "a" started, "a" finished, "b"
// started. It returns the segment's path.
func appendedJournal(t *testing.T, dir string) string {
	t.Helper()
	j := open(t, dir)
	if err := <-j.Started("a"); err != nil {
		t.Fatal(err)
	}
	if err := j.Finish(Entry{ID: "a", Response: []byte("answer-a"), Replay: true}); err != nil {
		t.Fatal(err)
	}
	if err := <-j.Started("b"); err != nil {
		t.Fatal(err)
	}
	closeJ(t, j)
	segs, _ := filepath.Glob(filepath.Join(dir, segmentPrefix+"*"))
	if len(segs) != 1 {
		t.Fatalf("%d segments, want the three flushes in one", len(segs))
	}
	data, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte(`{"op":"ids"`)); n != 3 {
		t.Fatalf("%d batches in the segment, want 3", n)
	}
	return segs[0]
}

// TestTornAppendDroppedQuietly: a flush cut short by a crash (part of a batch after
// the whole ones, at the end of the newest segment) was never acknowledged: it is
// dropped without a warning, and what the whole batches say stands.
func TestTornAppendDroppedQuietly(t *testing.T) {
	torn, err := encode([]record{{Op: opDone, ID: "b", Resp: []byte("answer-b"), Replay: true}, {Op: opStart, ID: "c"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	for name, tail := range map[string][]byte{
		"half a header":            torn[:5],
		"the header only":          torn[:bytes.IndexByte(torn, '\n')+1],
		"a record cut":             torn[:len(torn)-7],
		"a record garbled":         append(slices.Clone(torn[:len(torn)-12]), []byte("XXXXXXXXXXX\n")...),
		"the last newline missing": torn[:len(torn)-1],
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "fleet")
			seg := appendedJournal(t, dir)
			rewrite(t, seg, func(d []byte) []byte { return append(d, tail...) })
			j := open(t, dir)
			defer closeJ(t, j)
			if w := j.Warnings(); len(w) != 0 {
				t.Errorf("warnings %q; want none for a torn append", w)
			}
			if e, ok := j.Lookup("a"); !ok || string(e.Response) != "answer-a" {
				t.Errorf("Lookup(a) = %+v, %v; want its answer", e, ok)
			}
			if _, ok := j.Lookup("b"); ok {
				t.Error("b's answer from the torn flush was taken")
			}
			if got := j.Interrupted(); !slices.Equal(got, []string{"b"}) {
				t.Errorf("Interrupted = %v, want [b]", got)
			}
		})
	}
}

// TestDamagedAppendedBatch: a batch damaged before another one is not a torn append
// but damage, whatever segment it is in: its commands become unknown, with a warning.
func TestDamagedAppendedBatch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fleet")
	seg := appendedJournal(t, dir)
	rewrite(t, seg, func(d []byte) []byte {
		i := bytes.Index(d, []byte(`"op":"done"`))
		d[i+2] = 'X'
		return d
	})
	j := open(t, dir)
	defer closeJ(t, j)
	if e, ok := j.Lookup("a"); !ok || !e.Unknown {
		t.Errorf("Lookup(a) = %+v, %v; want unknown", e, ok)
	}
	if !strings.Contains(strings.Join(j.Warnings(), "\n"), "check failed") {
		t.Errorf("warnings %q; want the damage said", j.Warnings())
	}
}

// TestAppendsShareOneSegment: sequential flushes after the first of a segment cost
// an append and an fsync, not a new file; a restart writes the state as one
// compacted segment and appends after it in a new one.
func TestAppendsShareOneSegment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fleet")
	appendedJournal(t, dir)
	j := open(t, dir)
	if err := j.Finish(Entry{ID: "b", Response: []byte("answer-b"), Replay: true}); err != nil {
		t.Fatal(err)
	}
	if err := <-j.Started("c"); err != nil {
		t.Fatal(err)
	}
	closeJ(t, j)
	segs, _ := filepath.Glob(filepath.Join(dir, segmentPrefix+"*"))
	slices.Sort(segs)
	// The first segment (the generation before), the compacted one, the new flushes.
	if len(segs) != 3 {
		t.Fatalf("segments %v, want 3", segs)
	}
	if data, _ := os.ReadFile(segs[1]); !wholeCompacted(data) {
		t.Error("the restart did not write a compacted segment")
	}
	j = open(t, dir)
	defer closeJ(t, j)
	if e, ok := j.Lookup("b"); !ok || string(e.Response) != "answer-b" {
		t.Errorf("Lookup(b) = %+v, %v", e, ok)
	}
	if got := j.Interrupted(); !slices.Equal(got, []string{"c"}) {
		t.Errorf("Interrupted = %v, want [c]", got)
	}
}
