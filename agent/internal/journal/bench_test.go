package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// seed writes one segment holding n finished, delivered, replayable commands, as a
// compaction would leave them, so tests and benchmarks start from a full journal
// without running n commands.
func seed(tb testing.TB, dir string, n int) {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	at := time.Now().UnixMilli()
	resp := bytes.Repeat([]byte("r"), 200)
	for i := range n {
		id := fmt.Sprintf("seed-%05d", i)
		for _, r := range []record{
			{Op: opDone, ID: id, At: at, Resp: resp, Replay: true},
			{Op: opSent, ID: id},
		} {
			if err := enc.Encode(r); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, segmentName(0)), buf.Bytes(), 0o600); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkJournalCommands runs commands one after another as the session does
// (Started, Finish, MarkSent) and reports the segments written per command, compaction
// segments included. The run variants leave the writer idle for a moment while the
// command runs and before the next one arrives, as a fleet session does; without that
// pause the records of consecutive calls tend to meet in one write by chance.
func BenchmarkJournalCommands(b *testing.B) {
	for _, bc := range []struct {
		name    string
		entries int
		run     time.Duration
	}{
		{"empty", 0, 0},
		{"full", MaxEntries, 0},
		{"empty/run1ms", 0, time.Millisecond},
		{"full/run1ms", MaxEntries, time.Millisecond},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "fleet")
			if bc.entries > 0 {
				seed(b, dir, bc.entries)
			}
			j, err := Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			first := j.nextSeq
			resp := bytes.Repeat([]byte("a"), 200)
			b.ResetTimer()
			for i := range b.N {
				id := fmt.Sprintf("cmd-%08d", i)
				j.Started(id)
				if bc.run > 0 {
					time.Sleep(bc.run)
				}
				if err := j.Finish(Entry{ID: id, Response: resp, Replay: true}); err != nil {
					b.Fatal(err)
				}
				j.MarkSent(id)
				if bc.run > 0 {
					time.Sleep(bc.run)
				}
			}
			b.StopTimer()
			if err := j.Close(); err != nil {
				b.Fatal(err)
			}
			// nextSeq belongs to the writer, which has stopped.
			b.ReportMetric(float64(j.nextSeq-first)/float64(b.N), "segments/cmd")
		})
	}
}
