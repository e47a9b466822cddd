package journal

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// damageJournal writes a journal in dir: "a" finished and delivered, "b" finished
// (each record its own segment), then "run" started, "wait" accepted and "c"
// finished. It returns the path of the segment holding b's answer, which is neither
// the first nor the last.
func damageJournal(t *testing.T, dir string) string {
	t.Helper()
	j := openPerFlush(t, dir)
	for _, id := range []string{"a", "b"} {
		if err := <-j.Started(id); err != nil {
			t.Fatal(err)
		}
		if err := j.Finish(Entry{ID: id, Response: []byte("answer-" + id), Replay: true}); err != nil {
			t.Fatal(err)
		}
	}
	j.MarkSent("a")
	if err := <-j.Started("run"); err != nil {
		t.Fatal(err)
	}
	j.Accepted("wait")
	if err := <-j.Started("c"); err != nil {
		t.Fatal(err)
	}
	if err := j.Finish(Entry{ID: "c", Response: []byte("answer-c"), Replay: true}); err != nil {
		t.Fatal(err)
	}
	closeJ(t, j)
	segs, _ := filepath.Glob(filepath.Join(dir, segmentPrefix+"*"))
	slices.Sort(segs)
	for i, s := range segs {
		data, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte(`"op":"done","id":"b"`)) {
			if i == 0 || i == len(segs)-1 {
				t.Fatalf("b's answer is in segment %d of %d; the test needs it in the middle", i+1, len(segs))
			}
			return s
		}
	}
	t.Fatal("no segment holds b's answer")
	return ""
}

// rewrite replaces a segment's bytes.
func rewrite(t *testing.T, path string, f func([]byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, f(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedRecordsKeepTheirIDs: however the segment holding a finished command's
// answer is damaged, the command stays known, as seen with an unknown outcome, and is
// not forgotten (a forgotten id runs again when the server repeats it). The good
// records around the damage keep their meaning, and the unknown outcome survives the
// compaction that follows and later restarts.
func TestDamagedRecordsKeepTheirIDs(t *testing.T) {
	answerOf := func(data []byte) int {
		return bytes.Index(data, []byte(`"resp":"`)) + len(`"resp":"`)
	}
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, path string)
		kept   bool // the damaged file stays for inspection
	}{
		{"a byte of the answer changed", func(t *testing.T, path string) {
			rewrite(t, path, func(d []byte) []byte { d[answerOf(d)] ^= 0x01; return d })
		}, true},
		{"cut inside the record", func(t *testing.T, path string) {
			rewrite(t, path, func(d []byte) []byte { return d[:answerOf(d)] })
		}, true},
		{"the record's line removed", func(t *testing.T, path string) {
			rewrite(t, path, func(d []byte) []byte {
				lines := bytes.SplitAfter(d, []byte("\n"))
				return bytes.Join(slices.DeleteFunc(lines, func(l []byte) bool { return bytes.Contains(l, []byte(`"op":"done"`)) }), nil)
			})
		}, true},
		{"header and record both garbled", func(t *testing.T, path string) {
			rewrite(t, path, func(d []byte) []byte {
				return bytes.ReplaceAll(bytes.ReplaceAll(d, []byte(`"op"`), []byte(`"0p"`)), []byte(`"records"`), []byte(`"rec0rds"`))
			})
		}, true},
		{"zeroed", func(t *testing.T, path string) {
			rewrite(t, path, func(d []byte) []byte { return make([]byte, len(d)) })
		}, true},
		{"not a regular file", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"removed", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "fleet")
			seg := damageJournal(t, dir)
			tc.damage(t, seg)

			j := open(t, dir)
			check := func(j *Journal, when string) {
				t.Helper()
				e, ok := j.Lookup("b")
				if !ok || !e.Unknown || len(e.Response) != 0 {
					t.Errorf("%s: Lookup(b) = %+v, %v; want kept as seen with an unknown outcome", when, e, ok)
				}
				for _, id := range []string{"a", "c"} {
					if e, ok := j.Lookup(id); !ok || e.Unknown || string(e.Response) != "answer-"+id {
						t.Errorf("%s: Lookup(%s) = %+v, %v; want its intact answer", when, id, e, ok)
					}
				}
				if got := ids(j.Unsent()); !slices.Equal(got, []string{"c"}) {
					t.Errorf("%s: Unsent = %v, want [c]", when, got)
				}
			}
			check(j, "after the damage")
			if got := j.Interrupted(); !slices.Equal(got, []string{"run"}) {
				t.Errorf("Interrupted = %v, want [run]", got)
			}
			if got := j.NotStarted(); !slices.Equal(got, []string{"wait"}) {
				t.Errorf("NotStarted = %v, want [wait]", got)
			}
			warn := strings.Join(j.Warnings(), "\n")
			if !strings.Contains(warn, "unknown outcome") {
				t.Errorf("warnings do not say what the damage made unknown: %q", warn)
			}
			closeJ(t, j)
			aside := filepath.Join(dir, damagedPrefix+filepath.Base(seg))
			if _, err := os.Lstat(aside); (err == nil) != tc.kept {
				t.Errorf("damaged segment kept aside at %s: %v, want %v", aside, err == nil, tc.kept)
			}

			// Compacted at the first Open: the second finds the same state and no
			// new damage.
			j = open(t, dir)
			defer closeJ(t, j)
			check(j, "after a second restart")
			for _, w := range j.Warnings() {
				if strings.Contains(w, "unknown outcome") {
					t.Errorf("the second restart found damage again: %q", w)
				}
			}
			if tc.kept && !strings.Contains(strings.Join(j.Warnings(), "\n"), aside) {
				t.Errorf("warnings %q do not name the damaged segment kept aside", j.Warnings())
			}
		})
	}
}

// A started command whose later records are lost with a damaged segment may have
// finished there: it is unknown, not interrupted, and a command that was waiting may
// have started there: unknown, not "never started" (whose repeat would run it).
func TestDamageMakesCommandsInFlightUnknown(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fleet")
	j := openPerFlush(t, dir)
	j.Accepted("wait")
	if err := <-j.Started("run"); err != nil {
		t.Fatal(err)
	}
	// Rides with a later write: the delivery record below waits for none.
	if err := j.Finish(Entry{ID: "other", Response: []byte("x"), Replay: true}); err != nil {
		t.Fatal(err)
	}
	closeJ(t, j)
	segs, _ := filepath.Glob(filepath.Join(dir, segmentPrefix+"*"))
	slices.Sort(segs)
	rewrite(t, segs[len(segs)-1], func(d []byte) []byte { return d[:len(d)/2] })

	j = open(t, dir)
	defer closeJ(t, j)
	for _, id := range []string{"wait", "run", "other"} {
		if e, ok := j.Lookup(id); !ok || !e.Unknown {
			t.Errorf("Lookup(%s) = %+v, %v; want unknown", id, e, ok)
		}
	}
	if len(j.Interrupted())+len(j.NotStarted()) != 0 {
		t.Errorf("interrupted %v, not started %v; want none: their outcome is unknown", j.Interrupted(), j.NotStarted())
	}
}

// An emptied segment is damage, said as such. When it is the compacted one that holds
// the whole state (what every Open writes), the generation before it still holds
// everything: no finished command is forgotten, so none runs again.
func TestEmptiedSegment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fleet")
	j := open(t, dir)
	for _, id := range []string{"a", "b", "c"} {
		if err := <-j.Started(id); err != nil {
			t.Fatal(err)
		}
		if err := j.Finish(Entry{ID: id, Response: []byte("answer-" + id), Replay: true}); err != nil {
			t.Fatal(err)
		}
	}
	closeJ(t, j)
	// A restart compacts: the newest segment holds the whole state.
	j = open(t, dir)
	closeJ(t, j)
	segs, _ := filepath.Glob(filepath.Join(dir, segmentPrefix+"*"))
	slices.Sort(segs)
	newest := segs[len(segs)-1]
	if data, _ := os.ReadFile(newest); !wholeCompacted(data) {
		t.Fatal("the newest segment after a restart is not the compacted state")
	}
	if err := os.Truncate(newest, 0); err != nil {
		t.Fatal(err)
	}
	j = open(t, dir)
	defer closeJ(t, j)
	for _, id := range []string{"a", "b", "c"} {
		if e, ok := j.Lookup(id); !ok || e.Unknown || string(e.Response) != "answer-"+id {
			t.Errorf("Lookup(%s) = %+v, %v; want its answer, from the generation before", id, e, ok)
		}
	}
	warn := strings.Join(j.Warnings(), "\n")
	if !strings.Contains(warn, filepath.Base(newest)+" damaged (empty: a segment always holds at least its header)") {
		t.Errorf("warnings do not name the emptied segment: %q", warn)
	}

	// An emptied segment that is not compacted: the commands in flight before it are
	// unknown, as with any other damage.
	dir2 := filepath.Join(t.TempDir(), "fleet")
	j2 := openPerFlush(t, dir2)
	if err := <-j2.Started("run"); err != nil {
		t.Fatal(err)
	}
	if err := j2.Finish(Entry{ID: "run", Response: []byte("x"), Replay: true}); err != nil {
		t.Fatal(err)
	}
	closeJ(t, j2)
	segs, _ = filepath.Glob(filepath.Join(dir2, segmentPrefix+"*"))
	slices.Sort(segs)
	if err := os.Truncate(segs[len(segs)-1], 0); err != nil {
		t.Fatal(err)
	}
	j2 = open(t, dir2)
	defer closeJ(t, j2)
	if e, ok := j2.Lookup("run"); !ok || !e.Unknown {
		t.Errorf("Lookup(run) = %+v, %v; want unknown: its answer was in the emptied segment", e, ok)
	}
	if !strings.Contains(strings.Join(j2.Warnings(), "\n"), "empty") {
		t.Errorf("warnings %q", j2.Warnings())
	}
}
