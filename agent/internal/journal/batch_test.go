package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func openDelay(t *testing.T, dir string, delay time.Duration) *Journal {
	t.Helper()
	j, err := openWith(dir, delay, batchesPerSegment)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// openPerFlush opens the journal in dir with one flush a segment (no appends), for the
// tests of what happens across segments: compaction's bounds, a damaged segment
// between others.
func openPerFlush(t *testing.T, dir string) *Journal {
	t.Helper()
	j, err := openWith(dir, lazyDelay, 1)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// state is what a restarted agent would find in a journal.
type state struct {
	interrupted []string
	unsent      []string
	replayed    []string // of the ids asked about
}

// afterCrash copies the segments that are on disk now to a fresh directory and opens
// that, as the agent would after being killed at this moment: records still waiting
// in memory are lost.
func afterCrash(t *testing.T, dir string, ask ...string) state {
	t.Helper()
	crashed := filepath.Join(t.TempDir(), "fleet")
	if err := os.Mkdir(crashed, 0o700); err != nil {
		t.Fatal(err)
	}
	// Whole segments only: a temp file read here would be held open without
	// FILE_SHARE_DELETE, and on Windows the journal's rename of it would then fail.
	segs, _ := filepath.Glob(filepath.Join(dir, segmentPrefix+"*"+segmentSuffix))
	for _, s := range segs {
		data, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crashed, filepath.Base(s)), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	j := open(t, crashed)
	defer closeJ(t, j)
	st := state{interrupted: j.Interrupted(), unsent: ids(j.Unsent())}
	for _, id := range ask {
		if _, ok := j.Lookup(id); ok {
			st.replayed = append(st.replayed, id)
		}
	}
	return st
}

// TestRecordsAndCrash follows one command's records to disk: the start record goes at
// once, the delivery record waits for the next answer's flush, and a crash before it
// loses only that.
func TestRecordsAndCrash(t *testing.T) {
	dir := t.TempDir()
	// Delivery records never go on their own here, so what is on disk is what was
	// written at once or rode with a Finish.
	j := openDelay(t, dir, time.Hour)
	defer closeJ(t, j)

	j.Started("a")
	waitCrashState(t, dir, "the start of a on disk", func(st state) bool {
		return slices.Equal(st.interrupted, []string{"a"})
	})

	j.Started("b")
	if err := j.Finish(Entry{ID: "a", Response: []byte("answer-a"), Replay: true}); err != nil {
		t.Fatal(err)
	}
	st := afterCrash(t, dir, "a", "b")
	if !slices.Equal(st.interrupted, []string{"b"}) {
		t.Errorf("after Finish(a), Interrupted = %v; want [b]", st.interrupted)
	}
	if !slices.Equal(st.unsent, []string{"a"}) || !slices.Equal(st.replayed, []string{"a"}) {
		t.Errorf("after Finish(a), Unsent = %v, replayed %v; want [a] and [a]", st.unsent, st.replayed)
	}

	j.MarkSent("a")
	time.Sleep(50 * time.Millisecond) // a writer that flushed delivery records at once would have by now
	st = afterCrash(t, dir, "a")
	if !slices.Equal(st.unsent, []string{"a"}) {
		t.Errorf("crash right after MarkSent(a): Unsent = %v; want [a], sent once more", st.unsent)
	}

	if err := j.Finish(Entry{ID: "b", Response: []byte("answer-b"), Replay: true}); err != nil {
		t.Fatal(err)
	}
	st = afterCrash(t, dir, "a", "b")
	if len(st.interrupted) != 0 || !slices.Equal(st.unsent, []string{"b"}) || !slices.Equal(st.replayed, []string{"a", "b"}) {
		t.Errorf("after Finish(b): %+v; want nothing interrupted, only b unsent (a's delivery rode along), both replayed", st)
	}
}

// waitCrashState waits until a crash now would leave a journal in which ok holds.
func waitCrashState(t *testing.T, dir, what string, ok func(state) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := afterCrash(t, dir)
		if ok(st) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 10 s: %+v", what, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLazyRecordsWrittenWithinDelay checks that a delivery record with no answer to
// ride with still reaches the disk.
func TestLazyRecordsWrittenWithinDelay(t *testing.T) {
	dir := t.TempDir()
	j := openDelay(t, dir, 20*time.Millisecond)
	defer closeJ(t, j)
	if err := j.Finish(Entry{ID: "done", Response: []byte("x"), Replay: true}); err != nil {
		t.Fatal(err)
	}
	j.Started("long")
	j.MarkSent("done")
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := afterCrash(t, dir, "done")
		if slices.Equal(st.interrupted, []string{"long"}) && len(st.unsent) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("start and delivery records not on disk after 10 s: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSegmentsPerCommand: sequential commands cost at most two writes each (the start,
// then the answer carrying the previous delivery record), not one per record.
func TestSegmentsPerCommand(t *testing.T) {
	dir := t.TempDir()
	j := openDelay(t, dir, time.Hour)
	const n = 50
	for i := range n {
		id := fmt.Sprint("c", i)
		j.Started(id)
		// The command runs, and the next one takes a moment to come: a writer
		// that woke for every record would write each on its own.
		time.Sleep(time.Millisecond)
		if err := j.Finish(Entry{ID: id, Response: []byte("x"), Replay: true}); err != nil {
			t.Fatal(err)
		}
		j.MarkSent(id)
		time.Sleep(time.Millisecond)
	}
	closeJ(t, j)
	// Two per command, and the last delivery record written by Close.
	if j.nextSeq > 2*n+1 {
		t.Errorf("%d segments written for %d commands, want at most %d", j.nextSeq, n, 2*n+1)
	}
}

func TestCompactionPolicy(t *testing.T) {
	for _, c := range []struct {
		live, segments, written int
		want                    bool
	}{
		{0, maxSegments, 0, false},
		{0, maxSegments + 1, 0, true},
		{MaxEntries, 1000, 2*MaxEntries + 1000, false},
		{MaxEntries, 2000, 2*MaxEntries + 2000, false},
		{MaxEntries, maxSegments + MaxEntries/4 + 1, 2*MaxEntries + 2700, true},
		{MaxEntries, 10, 4*MaxEntries + MaxEntries/2 + 1, true},
		{100, 10, 5400, false},
		{100, 10, 5401, true},
	} {
		j := &Journal{entries: map[string]*Entry{}, started: map[string]bool{}}
		for i := range c.live {
			j.entries[fmt.Sprint(i)] = &Entry{}
		}
		j.segments = make([]uint64, c.segments)
		j.written = c.written
		if got := j.needCompaction(); got != c.want {
			t.Errorf("live %d, %d segments, %d records: needCompaction = %v, want %v", c.live, c.segments, c.written, got, c.want)
		}
	}
}

// TestCompactionFrequency runs sequential commands against a full journal, which
// used to be rewritten whole every 128 segments, and against one whose answers are
// dropped once delivered, whose segments must still be compacted.
func TestCompactionFrequency(t *testing.T) {
	if testing.Short() {
		t.Skip("-short (the Windows leg, under Wine): 600 commands over a full journal are a minute there; " +
			"the policy is the same code on every system and runs in full on Linux, and TestCompaction compacts under -short")
	}
	run := func(j *Journal, n int, replay bool) {
		t.Helper()
		for i := range n {
			id := fmt.Sprint("cmd-", i)
			j.Started(id)
			if err := j.Finish(Entry{ID: id, Response: []byte("x"), Replay: replay}); err != nil {
				t.Fatal(err)
			}
			j.MarkSent(id)
		}
	}

	dir := filepath.Join(t.TempDir(), "full")
	seed(t, dir, MaxEntries)
	j := openPerFlush(t, dir)
	const n = 300
	run(j, n, true)
	closeJ(t, j)
	if j.compactions != 0 {
		t.Errorf("full journal: %d compactions in %d commands, want none", j.compactions, n)
	}
	if segs, _ := filepath.Glob(filepath.Join(dir, segmentPrefix+"*"+segmentSuffix)); len(segs) < n {
		t.Errorf("full journal: %d segments on disk after %d commands", len(segs), n)
	}

	dir = filepath.Join(t.TempDir(), "transient")
	j = openPerFlush(t, dir)
	run(j, n, false)
	closeJ(t, j)
	// Nothing stays live, so the segments are compacted every maxSegments or so.
	if j.compactions < n/(2*maxSegments) || j.compactions > n/(maxSegments/2) {
		t.Errorf("transient answers: %d compactions in %d commands, want about %d", j.compactions, n, n/maxSegments)
	}
	if segs, _ := filepath.Glob(filepath.Join(dir, segmentPrefix+"*"+segmentSuffix)); j.current() > segmentLimit(0) || len(segs) > 2*segmentLimit(0)+1 {
		t.Errorf("transient answers: %d segments to replay, %d on disk, want at most %d and %d", j.current(), len(segs), segmentLimit(0), 2*segmentLimit(0)+1)
	}
}
