package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

func open(t *testing.T, dir string) *Journal {
	t.Helper()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func closeJ(t *testing.T, j *Journal) {
	t.Helper()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestFinishSurvivesReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fleet")
	j := open(t, dir)
	j.Started("a")
	j.Started("b")
	j.Started("c")
	if err := j.Finish(Entry{ID: "a", Response: []byte("answer-a"), Replay: true}); err != nil {
		t.Fatal(err)
	}
	if err := j.Finish(Entry{ID: "b", Response: []byte("busy"), Replay: false}); err != nil {
		t.Fatal(err)
	}
	if _, ok := j.Lookup("b"); ok {
		t.Error("an answer that does not settle its command must not be replayed")
	}
	if got := ids(j.Unsent()); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Unsent = %v, want [a b]", got)
	}
	j.MarkSent("b")
	closeJ(t, j)

	j = open(t, dir)
	defer closeJ(t, j)
	e, ok := j.Lookup("a")
	if !ok || string(e.Response) != "answer-a" || e.Sent {
		t.Errorf("Lookup(a) = %+v, %v; want the stored unsent answer", e, ok)
	}
	if got := ids(j.Unsent()); !slices.Equal(got, []string{"a"}) {
		t.Errorf("after reopening, Unsent = %v, want [a] (b was delivered)", got)
	}
	if got := j.Interrupted(); !slices.Equal(got, []string{"c"}) {
		t.Errorf("Interrupted = %v, want [c]", got)
	}
	j.MarkSent("a")
	if len(j.Unsent()) != 0 {
		t.Error("a is still unsent after MarkSent")
	}
	if _, ok := j.Lookup("a"); !ok {
		t.Error("a delivered answer must still be replayed")
	}
}

func ids(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func TestInterruptedOnlyOnce(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir)
	j.Started("x")
	closeJ(t, j)
	j = open(t, dir)
	if got := j.Interrupted(); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("Interrupted = %v, want [x]", got)
	}
	// The caller settles it.
	if err := j.Finish(Entry{ID: "x", Response: []byte("interrupted"), Replay: true}); err != nil {
		t.Fatal(err)
	}
	closeJ(t, j)
	j = open(t, dir)
	defer closeJ(t, j)
	if got := j.Interrupted(); len(got) != 0 {
		t.Errorf("Interrupted after settling = %v, want none", got)
	}
}

func TestBounds(t *testing.T) {
	j := open(t, t.TempDir())
	defer closeJ(t, j)
	for _, e := range []Entry{
		{ID: "", Response: []byte("x")},
		{ID: strings.Repeat("i", MaxIDBytes+1), Response: []byte("x")},
		{ID: "big", Response: make([]byte, MaxResponseBytes+1)},
	} {
		if err := j.Finish(e); err == nil {
			t.Errorf("Finish(id of %d bytes, answer of %d bytes) = nil, want an error", len(e.ID), len(e.Response))
		}
	}
}

// TestForgetsOldest checks the bound on remembered commands without writing ten
// thousand records to disk.
func TestForgetsOldest(t *testing.T) {
	j := &Journal{entries: map[string]*Entry{}}
	for i := range MaxEntries + 5 {
		j.remember(&Entry{ID: fmt.Sprint(i)})
	}
	if len(j.entries) != MaxEntries {
		t.Fatalf("%d entries, want %d", len(j.entries), MaxEntries)
	}
	for i := range 5 {
		if _, ok := j.entries[fmt.Sprint(i)]; ok {
			t.Errorf("entry %d should have been forgotten first", i)
		}
	}
	if _, ok := j.entries[fmt.Sprint(MaxEntries+4)]; !ok {
		t.Error("the newest entry was forgotten")
	}
}

func TestCompaction(t *testing.T) {
	dir := t.TempDir()
	j := openPerFlush(t, dir)
	n, writers := 3000, 8
	if testing.Short() {
		// The Windows leg runs -short under Wine, where each segment write costs ten
		// times what it does on Linux: fewer commands, from one writer, so that each
		// waits for its own segment and the segments still outgrow the limit.
		n, writers = 250, 1
		t.Logf("-short: %d commands from %d writers instead of 3000 from 8", n, writers)
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += writers {
				id := fmt.Sprintf("cmd-%04d", i)
				j.Started(id)
				if err := j.Finish(Entry{ID: id, Response: []byte(id), Replay: i%3 != 0}); err != nil {
					t.Error(err)
					return
				}
				j.MarkSent(id)
			}
		}()
	}
	wg.Wait()
	closeJ(t, j)
	if j.compactions == 0 {
		t.Errorf("no compaction in %d commands", n)
	}
	// The writer has stopped: its last check saw this live state.
	// The generation before the newest compacted segment stays on disk too, unread.
	limit := segmentLimit(len(j.entries) + len(j.started))
	segs, _ := filepath.Glob(filepath.Join(dir, "seg-*"))
	if j.current() > limit || len(segs) > 2*limit+1 {
		t.Errorf("%d segments to replay and %d on disk, compaction should keep at most %d and %d", j.current(), len(segs), limit, 2*limit+1)
	}
	j = open(t, dir)
	defer closeJ(t, j)
	// Open compacts: the newest segment holds the whole state; the ones before it
	// are the generation kept in case it is lost, and are not read.
	segs, _ = filepath.Glob(filepath.Join(dir, "seg-*"))
	slices.Sort(segs)
	if data, err := os.ReadFile(segs[len(segs)-1]); err != nil || !wholeCompacted(data) {
		t.Errorf("the newest segment after Open is not a whole compacted one: %v", err)
	}
	if j.current() != 1 {
		t.Errorf("Open should leave one segment to replay, has %d", j.current())
	}
	for i := range n {
		id := fmt.Sprintf("cmd-%04d", i)
		e, ok := j.Lookup(id)
		if want := i%3 != 0; ok != want || (ok && (string(e.Response) != id || !e.Sent)) {
			t.Fatalf("Lookup(%s) = %+v, %v; want found=%v, sent", id, e, ok, want)
		}
	}
	if len(j.Unsent()) != 0 || len(j.Interrupted()) != 0 {
		t.Errorf("Unsent %d, Interrupted %d; want none", len(j.Unsent()), len(j.Interrupted()))
	}
}

func TestDamagedSegmentsAndLeftovers(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir)
	if err := j.Finish(Entry{ID: "good", Response: []byte("ok"), Replay: true}); err != nil {
		t.Fatal(err)
	}
	closeJ(t, j)
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(segmentName(100), "{\"op\":\"done\",\"id\":\"later\",\"resp\":\"b2s=\",\"replay\":true}\nnot json\n")
	write(segmentName(101), `{"op":"explode","id":"x"}`+"\n")
	leftover := segmentName(102) + ".tmp.0123456789abcdef"
	write(leftover, "half")
	write("notes.txt", "hello")
	if err := os.Mkdir(filepath.Join(dir, "spool"), 0o700); err != nil {
		t.Fatal(err)
	}

	j, err := Open(dir, "spool")
	if err != nil {
		t.Fatal(err)
	}
	defer closeJ(t, j)
	if _, ok := j.Lookup("good"); !ok {
		t.Error("the intact segment was not loaded")
	}
	if _, ok := j.Lookup("later"); !ok {
		t.Error("the records before the damage were not loaded")
	}
	warn := strings.Join(j.Warnings(), "\n")
	for _, want := range []string{"damaged", "unknown op", "notes.txt"} {
		if !strings.Contains(warn, want) {
			t.Errorf("warnings %q do not mention %q", warn, want)
		}
	}
	if strings.Contains(warn, "spool") {
		t.Errorf("warnings %q name the caller's own entry", warn)
	}
	if _, err := os.Stat(filepath.Join(dir, leftover)); !os.IsNotExist(err) {
		t.Errorf("the temp file of an interrupted write was not removed: %v", err)
	}
}

func TestModesAndUntrustedDir(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX modes")
	}
	base := t.TempDir()
	dir := filepath.Join(base, "a", "fleet")
	j := open(t, dir)
	if err := j.Finish(Entry{ID: "m", Response: []byte("x"), Replay: true}); err != nil {
		t.Fatal(err)
	}
	closeJ(t, j)
	for _, d := range []string{filepath.Join(base, "a"), dir} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v (%v), want 0700", d, fi.Mode().Perm(), err)
		}
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "seg-*"))
	for _, s := range segs {
		if fi, err := os.Stat(s); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", s, fi.Mode().Perm(), err)
		}
	}

	link := filepath.Join(base, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(link); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Open(symlink) = %v, want a refusal", err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(open); err == nil || !strings.Contains(err.Error(), "writable") {
		t.Errorf("Open(world-writable dir) = %v, want a refusal", err)
	}
}

func TestClosed(t *testing.T) {
	j := open(t, t.TempDir())
	closeJ(t, j)
	if err := j.Finish(Entry{ID: "late", Response: []byte("x")}); err != ErrClosed {
		t.Errorf("Finish after Close = %v, want ErrClosed", err)
	}
	j.Started("late")
	j.MarkSent("late")
	if err := j.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

// Started's channel answers only once the start record is on disk: a copy of the
// directory taken at that moment, as a crash would leave it, knows the command.
func TestStartedIsDurableWhenItAnswers(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir)
	defer closeJ(t, j)
	if err := <-j.Started("x"); err != nil {
		t.Fatal(err)
	}
	crashed := t.TempDir()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		b, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crashed, de.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	after := open(t, crashed)
	defer closeJ(t, after)
	if got := after.Interrupted(); !slices.Equal(got, []string{"x"}) {
		t.Errorf("after the crash, Interrupted = %v, want [x]", got)
	}
	closed := open(t, t.TempDir())
	closeJ(t, closed)
	if err := <-closed.Started("y"); !errors.Is(err, ErrClosed) {
		t.Errorf("Started after Close: %v, want ErrClosed", err)
	}
}

// A command accepted to wait (stagger, delay, slot) that never reached its plugin is
// told apart after a restart from one that had started: NotStarted, not Interrupted.
// Its accept record rides with the next write.
func TestAcceptedButNotStarted(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir)
	j.Accepted("waiting")
	j.Accepted("ran")
	if err := <-j.Started("ran"); err != nil {
		t.Fatal(err)
	}
	closeJ(t, j)
	j = open(t, dir)
	if got := j.NotStarted(); !slices.Equal(got, []string{"waiting"}) {
		t.Errorf("NotStarted = %v, want [waiting]", got)
	}
	if got := j.Interrupted(); !slices.Equal(got, []string{"ran"}) {
		t.Errorf("Interrupted = %v, want [ran]", got)
	}
	// Settled, neither comes back.
	for _, id := range []string{"waiting", "ran"} {
		if err := j.Finish(Entry{ID: id, Response: []byte(id)}); err != nil {
			t.Fatal(err)
		}
	}
	closeJ(t, j)
	again := open(t, dir)
	defer closeJ(t, again)
	if len(again.NotStarted())+len(again.Interrupted()) != 0 {
		t.Errorf("after settling: not started %v, interrupted %v", again.NotStarted(), again.Interrupted())
	}
}
