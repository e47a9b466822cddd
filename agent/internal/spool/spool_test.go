package spool

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
)

func testSpool(t *testing.T, perAnswer, total int64) (*Spool, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "spool")
	sp, err := NewSpool(dir, perAnswer, total)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sp.Close)
	return sp, dir
}

// push is what the relay does with a RUNNING message: keep it, then queue it.
func push(sp *Spool, id, output string) Msg {
	return Msg{Resp: Running(id, output), Kind: KindRows, Idx: sp.Rows(id, output)}
}

// drainPlan takes every planned message as a stream would.
func drainPlan(sp *Spool) []string {
	var out []string
	for {
		m, ok := sp.Next()
		if !ok {
			return out
		}
		out = append(out, m.Resp.GetCommandId()+":"+m.Resp.GetStatus().String()+":"+m.Resp.GetOutput())
		sp.Pop(time.Now())
	}
}

func terminalOf(id string, st agentv1.CommandResponse_Status) *agentv1.CommandResponse {
	return &agentv1.CommandResponse{CommandId: id, Status: st, SentAt: Now()}
}

// A break re-sends what left, whole from the first message, and nothing that had not
// left (the outbox still holds that); a terminal that left goes again after them.
func TestSpoolResendsWhatLeft(t *testing.T) {
	sp, _ := testSpool(t, 1<<20, 1<<20)
	m0, m1 := push(sp, "a", "r|0\nr|1"), push(sp, "a", "r|2")
	push(sp, "a", "r|3") // still queued when the stream breaks
	sp.Handed(m0, time.Now())
	sp.Handed(m1, time.Now())
	lone := Msg{Resp: rejected("b", "command expired")}
	sp.Handed(lone, time.Now())
	sp.Broken()
	got := drainPlan(sp)
	want := []string{"a:RUNNING:r|0\nr|1", "a:RUNNING:r|2", "b:REJECTED:command expired"}
	if !slices.Equal(got, want) {
		t.Fatalf("plan %q, want %q", got, want)
	}

	// The command ends; its timing and terminal leave, then the stream breaks again:
	// all of it goes once more, and the terminal is a SUCCESS (nothing was lost).
	timing := Running("a", "__timing__|exec_ms=5")
	sp.Timing(timing)
	_, term := sp.Seal(terminalOf("a", agentv1.CommandResponse_SUCCESS), false)
	sp.Handed(Msg{Resp: Running("a", "r|3"), Kind: KindRows, Idx: 2}, time.Now())
	sp.Handed(Msg{Resp: timing, Kind: KindTiming}, time.Now())
	sp.Handed(Msg{Resp: term, Kind: KindTerminal}, time.Now())
	sp.Broken()
	got = drainPlan(sp)
	want = []string{"a:RUNNING:r|0\nr|1", "a:RUNNING:r|2", "a:RUNNING:r|3", "a:RUNNING:__timing__|exec_ms=5", "a:SUCCESS:", "b:REJECTED:command expired"}
	if !slices.Equal(got, want) {
		t.Fatalf("plan after the terminal %q, want %q", got, want)
	}
}

// A heartbeat confirms what left well before it was sent: the answer is forgotten,
// its records dropped and its id returned for the journal; later messages are not.
func TestSpoolConfirm(t *testing.T) {
	sp, dir := testSpool(t, 1<<20, 1<<20)
	m := push(sp, "a", "r|0")
	_, term := sp.Seal(terminalOf("a", agentv1.CommandResponse_SUCCESS), false)
	left := time.Now()
	sp.Handed(m, left)
	sp.Handed(Msg{Resp: term, Kind: KindTerminal}, left)
	sp.Handed(Msg{Resp: rejected("b", "no")}, left)
	if ids := sp.Confirm(left); len(ids) != 0 {
		t.Fatalf("confirmed %v by a heartbeat sent before the terminal left", ids)
	}
	running := push(sp, "c", "r|0")
	sp.Handed(running, left)
	if ids := sp.Confirm(left.Add(time.Millisecond)); !slices.Equal(ids, []string{"a"}) {
		t.Fatalf("confirmed %v, want [a] (c has no terminal yet)", ids)
	}
	// a's record stays in the segment new records still go to; it is dropped with
	// the segment once that is full and nobody holds it.
	if n := len(segments(t, dir)); n != 1 || !sp.Unconfirmed() {
		t.Errorf("after the confirmation: %d segments, unconfirmed %v; want one and c waiting", n, sp.Unconfirmed())
	}
	sp.Broken()
	if got := drainPlan(sp); !slices.Equal(got, []string{"c:RUNNING:r|0"}) {
		t.Errorf("plan %q: the confirmed answer and lone message must not go again", got)
	}
}

// Past the per-answer bound rows are sent but not kept: a break after they left makes
// them missing, counted in rows, and the terminal a FAILURE that says how many.
func TestSpoolBoundMakesMissingRowsAFailure(t *testing.T) {
	sp, _ := testSpool(t, 30, 1<<20)
	m0 := push(sp, "a", "row|0")        // 5+8 bytes: kept
	m1 := push(sp, "a", "row|1\nrow|2") // would pass 30: not kept
	m2 := push(sp, "a", "row|3")        // not kept either: the file holds a prefix only
	for _, m := range []Msg{m0, m1, m2} {
		sp.Handed(m, time.Now())
	}
	sp.Broken()
	if got := drainPlan(sp); !slices.Equal(got, []string{"a:RUNNING:row|0"}) {
		t.Fatalf("plan %q, want the kept prefix", got)
	}
	row, term := sp.Seal(terminalOf("a", agentv1.CommandResponse_SUCCESS), false)
	if term.GetStatus() != agentv1.CommandResponse_FAILURE || term.GetExitCode() != 1 || term.GetError().GetCode() != "rows_missing" {
		t.Fatalf("terminal %v, want FAILURE rows_missing", term)
	}
	if !strings.HasPrefix(row, "error|3 rows may be missing: ") {
		t.Errorf("error row %q, want the 3 rows that left unkept", row)
	}
}

// Nothing kept (the bounds are 0): a break re-sends a terminal that left as it was
// (one command, one terminal, whatever the breaks), after an error row that says rows
// may be missing.
func TestSpoolOffStillCountsWhatIsLost(t *testing.T) {
	sp, err := NewSpool("", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	m := push(sp, "a", "r|0")
	sp.Handed(m, time.Now())
	_, term := sp.Seal(terminalOf("a", agentv1.CommandResponse_SUCCESS), false)
	sp.Handed(Msg{Resp: term, Kind: KindTerminal}, time.Now())
	sp.Broken()
	got := drainPlan(sp)
	if len(got) != 2 || !strings.HasPrefix(got[0], "a:RUNNING:error|1 rows may be missing") || got[1] != "a:SUCCESS:" {
		t.Errorf("plan %q, want the missing-rows row and the SUCCESS that left", got)
	}
	// Another break: the same again.
	sp.Broken()
	if again := drainPlan(sp); !slices.Equal(again, got) {
		t.Errorf("second re-send %q, want %q", again, got)
	}
}

// The log outlives the agent: the next start re-sends a command's kept messages
// before its recorded terminal; an answer whose last record was torn adds an error row
// saying rows may be missing before that terminal, which stays the one recorded (the
// journal replays it); records nobody claims go, and their segment with them once no
// kept answer is left in it.
func TestSpoolRestoreAfterRestart(t *testing.T) {
	sp, dir := testSpool(t, 1<<20, 1<<20)
	for _, id := range []string{"orphan", "done", "torn"} {
		sp.Handed(push(sp, id, id+"|0"), time.Now())
		sp.Handed(push(sp, id, id+"|1"), time.Now())
	}
	sp.Close() // the agent is killed: nothing confirmed
	segs := segments(t, dir)
	if len(segs) != 1 {
		t.Fatalf("segments %q, want one", segs)
	}
	fi, err := os.Stat(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	// The last record, torn's second, loses its last 3 bytes.
	if err := os.Truncate(segs[0], fi.Size()-3); err != nil {
		t.Fatal(err)
	}

	next, err := NewSpool(dir, 1<<20, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if n := next.Restore("done", terminalOf("done", agentv1.CommandResponse_SUCCESS)); n != 2 {
		t.Errorf("restored %d messages of done, want 2", n)
	}
	if n := next.Restore("torn", terminalOf("torn", agentv1.CommandResponse_SUCCESS)); n != 1 {
		t.Errorf("restored %d messages of torn, want the 1 before the damage", n)
	}
	next.Sweep()
	next.Broken()
	got := drainPlan(next)
	want := []string{"done:RUNNING:done|0", "done:RUNNING:done|1", "done:SUCCESS:", "torn:RUNNING:torn|0", "torn:RUNNING:error|rows after the first 1 messages may be missing: the answer spool was damaged while the agent was down", "torn:SUCCESS:"}
	if !slices.Equal(got, want) {
		t.Errorf("plan after the restart\n%q\nwant\n%q", got, want)
	}
	// Both confirmed: the old segment goes, and with it the orphan's records.
	if ids := next.Confirm(time.Now().Add(time.Hour)); len(ids) != 2 {
		t.Fatalf("confirmed %v, want done and torn", ids)
	}
	if left := segments(t, dir); len(left) != 0 {
		t.Errorf("segments %q left after every kept answer was confirmed", left)
	}
}

// An interrupted command's kept rows go first, and the rows of its answer made after
// the restart are appended to the same file.
func TestSpoolRestoreInterrupted(t *testing.T) {
	sp, dir := testSpool(t, 1<<20, 1<<20)
	sp.Handed(push(sp, "x", "x|0"), time.Now())
	sp.Close()
	next, err := NewSpool(dir, 1<<20, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	next.Restore("x", nil)
	errRow := push(next, "x", "error|command interrupted")
	if errRow.Idx != 1 {
		t.Errorf("the new row has index %d, want 1 after the restored one", errRow.Idx)
	}
	next.Broken()
	if got := drainPlan(next); !slices.Equal(got, []string{"x:RUNNING:x|0"}) {
		t.Fatalf("plan %q", got)
	}
	next.Handed(errRow, time.Now())
	next.Broken()
	if got := drainPlan(next); !slices.Equal(got, []string{"x:RUNNING:x|0", "x:RUNNING:error|command interrupted"}) {
		t.Errorf("plan with the appended row %q", got)
	}
}

// A spool file is framed: a record whose checksum does not match is damage, not data.
func TestSpoolRecordChecksum(t *testing.T) {
	sp, _ := testSpool(t, 1<<20, 1<<20)
	sp.Handed(push(sp, "a", "a|0"), time.Now())
	sp.Close()
	name := segments(t, sp.dir)[0]
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0x20
	if err := os.WriteFile(name, b, 0o600); err != nil {
		t.Fatal(err)
	}
	next, err := NewSpool(filepath.Dir(name), 1<<20, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if n := next.Restore("a", nil); n != 0 {
		t.Errorf("restored %d messages from a file with a flipped byte, want 0", n)
	}
}

// A break in the middle of a re-send loses none of it: the next plan is made from the
// answers, not from what the last plan had left, and confirms nothing until it is over.
func TestSpoolBreakDuringResend(t *testing.T) {
	sp, _ := testSpool(t, 1<<20, 1<<20)
	for _, id := range []string{"a", "b"} {
		m := push(sp, id, id+"|0")
		_, term := sp.Seal(terminalOf(id, agentv1.CommandResponse_SUCCESS), false)
		sp.Handed(m, time.Now())
		sp.Handed(Msg{Resp: term, Kind: KindTerminal}, time.Now())
	}
	sp.Handed(Msg{Resp: rejected("c", "no")}, time.Now())
	sp.Broken()
	// The new stream takes a's row only, then breaks too.
	if m, ok := sp.Next(); !ok || m.Resp.GetOutput() != "a|0" {
		t.Fatalf("first planned message %v", m.Resp)
	}
	sp.Pop(time.Now())
	if ids := sp.Confirm(time.Now().Add(time.Hour)); len(ids) != 0 {
		t.Errorf("confirmed %v during a re-send", ids)
	}
	sp.Broken()
	got := drainPlan(sp)
	want := []string{"a:RUNNING:a|0", "a:SUCCESS:", "b:RUNNING:b|0", "b:SUCCESS:", "c:REJECTED:no"}
	if !slices.Equal(got, want) {
		t.Fatalf("plan after a break during the re-send\n%q\nwant\n%q", got, want)
	}
	if ids := sp.Confirm(time.Now().Add(time.Hour)); !slices.Equal(ids, []string{"a", "b"}) || sp.Unconfirmed() {
		t.Errorf("after the re-send: confirmed %v, unconfirmed %v", ids, sp.Unconfirmed())
	}
}

// rejected is a rejection as the session makes one.
func rejected(id, reason string) *agentv1.CommandResponse {
	return &agentv1.CommandResponse{CommandId: id, Status: agentv1.CommandResponse_REJECTED, Output: reason, SentAt: Now()}
}

// segments lists the log's segment files in dir.
func segments(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "log-*.rows"))
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// Under a steady flow of answers, each confirmed soon after it ends, the log stays at a
// segment or two however many answers pass through it, and one answer left
// unconfirmed holds only its own segment, which goes once it is confirmed.
func TestSpoolLogStaysSmall(t *testing.T) {
	sp, dir := testSpool(t, 1<<20, 64<<20)
	row := strings.Repeat("x", 1000)
	pinned := push(sp, "pinned", "p|0")
	sp.Handed(pinned, time.Now())
	first := segments(t, dir)
	const n = 20000 // about 20 MB of records: several segments' worth
	for i := range n {
		id := "c" + strconv.Itoa(i)
		m := push(sp, id, row)
		_, term := sp.Seal(terminalOf(id, agentv1.CommandResponse_SUCCESS), false)
		left := time.Now()
		sp.Handed(m, left)
		sp.Handed(Msg{Resp: term, Kind: KindTerminal}, left)
		if i%100 == 99 {
			sp.Confirm(left.Add(time.Millisecond))
		}
	}
	sp.Confirm(time.Now().Add(time.Millisecond))
	segs := segments(t, dir)
	if len(segs) > 2 || !slices.Contains(segs, first[0]) {
		t.Errorf("after %d answers: segments %q, want the pinned one and the active one", n, segs)
	}
	if sp.used > 2*segLimit {
		t.Errorf("the log counts %d bytes, want at most two segments", sp.used)
	}
	sp.Broken()
	if got := drainPlan(sp); !slices.Equal(got, []string{"pinned:RUNNING:p|0"}) {
		t.Errorf("plan %q, want the pinned answer's row read back from its old segment", got)
	}
	_, term := sp.Seal(terminalOf("pinned", agentv1.CommandResponse_SUCCESS), false)
	sp.Handed(Msg{Resp: term, Kind: KindTerminal}, time.Now())
	sp.Confirm(time.Now().Add(time.Millisecond))
	if segs := segments(t, dir); slices.Contains(segs, first[0]) {
		t.Errorf("the pinned answer's segment outlived its confirmation: %q", segs)
	}
}

// The spool's bound counts the log's bytes: past it a message is sent but not kept,
// and a break then makes the answer say that rows may be missing.
func TestSpoolTotalBoundCountsTheLog(t *testing.T) {
	sp, _ := testSpool(t, 1<<20, 4096)
	var handed []Msg
	for i := range 100 {
		m := push(sp, "a", strings.Repeat("r", 100)+strconv.Itoa(i))
		handed = append(handed, m)
		sp.Handed(m, time.Now())
	}
	if sp.used > 4096 {
		t.Fatalf("the log holds %d bytes past its bound of 4096", sp.used)
	}
	sp.Broken()
	got := drainPlan(sp)
	if len(got) == 0 || len(got) >= len(handed) {
		t.Fatalf("re-sent %d of %d messages, want the kept prefix", len(got), len(handed))
	}
	if row, term := sp.Seal(terminalOf("a", agentv1.CommandResponse_SUCCESS), false); term.GetError().GetCode() != "rows_missing" || row == "" {
		t.Errorf("terminal %v, want rows_missing", term)
	}
}

// A file of its own that an agent before the log left for a command is read once,
// its records copied into the log, and removed.
func TestSpoolReadsLegacyFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("old"))
	legacy := filepath.Join(dir, hex.EncodeToString(sum[:20])+".rows")
	var b bytes.Buffer
	for _, rec := range []string{legacyMagic + "old", "old|0", "old|1\nold|2"} {
		if err := writeRecord(&b, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(legacy, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err := NewSpool(dir, 1<<20, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if n := sp.Restore("old", terminalOf("old", agentv1.CommandResponse_SUCCESS)); n != 2 {
		t.Fatalf("restored %d messages from the old file, want 2", n)
	}
	sp.Sweep()
	if _, err := os.Stat(legacy); !os.IsNotExist(err) {
		t.Errorf("the old file is still there: %v", err)
	}
	sp.Broken()
	want := []string{"old:RUNNING:old|0", "old:RUNNING:old|1\nold|2", "old:SUCCESS:"}
	if got := drainPlan(sp); !slices.Equal(got, want) {
		t.Errorf("plan %q, want %q", got, want)
	}
}

// A segment that is not a regular file, or that does not begin as a segment does, is
// damage: answers restored then say rows may be missing rather than send what cannot
// be trusted, and Sweep removes it.
func TestSpoolStrangeSegment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, segName(1)), []byte("not a segment"), 0o600); err != nil {
		t.Fatal(err)
	}
	next := segName(2)
	if runtime.GOOS != "windows" { // a link there needs a privilege Windows rarely grants
		if err := os.Symlink("/etc/passwd", filepath.Join(dir, segName(2))); err != nil {
			t.Fatal(err)
		}
		next = segName(3)
	}
	sp, err := NewSpool(dir, 1<<20, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if n := sp.Restore("x", terminalOf("x", agentv1.CommandResponse_SUCCESS)); n != 0 {
		t.Fatalf("restored %d messages", n)
	}
	sp.Sweep()
	sp.Broken()
	got := drainPlan(sp)
	if len(got) != 2 || !strings.Contains(got[0], "may be missing: the answer spool was damaged") || got[1] != "x:SUCCESS:" {
		t.Errorf("plan %q, want the damage row and the recorded terminal", got)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d files left after Sweep", len(left))
	}
	// The spool goes on: a new answer starts a new segment.
	sp.Handed(push(sp, "y", "y|0"), time.Now())
	if segs := segments(t, dir); len(segs) != 1 || filepath.Base(segs[0]) != next {
		t.Errorf("segments %q, want %s", segs, next)
	}
}

// Only a segment's own name is read as one.
func TestSegName(t *testing.T) {
	for name, want := range map[string]uint64{
		segName(1):                   1,
		segName(0xabc):               0xabc,
		"xlog-0000000000000001.rows": 0,
		"log-0000000000000001.row":   0,
		"log-000000000000001.rows":   0,
		"log-0000000000000000.rows":  0,
		"log-000000000000000g.rows":  0,
		"free-1.rows":                0,
	} {
		seq, ok := parseSegName(name)
		if ok != (want != 0) || seq != want {
			t.Errorf("parseSegName(%q) = %d, %v; want %d", name, seq, ok, want)
		}
	}
}
