package spool

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/agent/fleetpb/commonv1"
	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/rows"
	"github.com/yuzugo/yuzu/sdk/safefile"
)

// The spool is the agent's half of at-least-once delivery over a protocol that
// acknowledges nothing (docs/fleet.md, "Nothing lost"). A message handed to the stream
// (Send returned) has only reached gRPC's buffers and may die with the connection, so
// every answer stays here after it leaves, until it is confirmed: a heartbeat that the
// agent sent on the same connection at least confirmDelay after the answer's terminal
// came back. When a stream breaks, every answer with a message handed and not
// confirmed is sent again, whole, at the head of the next stream: its RUNNING
// messages from the first, then its timing and terminal if they had left. A message of
// no answer (a rejection, a replay, a duplicate's notice) is sent again as it was.
//
// The RUNNING messages of a command are kept in a file of their own (spoolDir, one
// per command, named by a hash of its id), written before the message is queued, so
// they also survive a restart of the agent: the next start sends them again ahead of
// the recorded terminal (or of the interrupted answer). The files are bounded per
// answer and in all. A message past either bound is sent but not kept: should the
// stream break after it left, it cannot be sent again, and the command's terminal
// says how many rows may be missing (FAILURE, rows_missing) instead of SUCCESS.
type Spool struct {
	dir          string // "" when nothing is kept on disk
	perAnswer    int64
	total        int64
	ConfirmDelay time.Duration

	mu      sync.Mutex
	used    int64 // bytes in the files
	answers map[string]*answer
	order   []*answer // by first message
	lone    []*handedMsg
	plan    []planItem
	reader  *planReader // the file the head of the plan reads from
	// free are files of confirmed answers kept to be reused (truncated, renamed) by
	// the next answers rather than removed: a file made and removed per command
	// was most of the agent's CPU under a flood of small commands (ext4's inode
	// allocation), a rename is not. At most maxFree; swept at the next start.
	free    []string
	freeSeq int
}

// maxFree bounds the files kept for reuse (as many as commands can be in flight, so
// that a steady flood makes none), and maxFreeBytes the size of a file that is kept
// (a larger one is removed: its blocks are not worth holding); together at most 8 MiB
// of disk.
const (
	maxFree      = 2048
	maxFreeBytes = 4 << 10
)

// confirmDelay is how long after an answer's terminal left a heartbeat must have been
// sent for its answer to confirm the terminal: the server's transport read the
// terminal before the heartbeat (one connection, in order), and this leaves the
// server's command stream a moment to take it from there.
const confirmDelay = time.Second

// spoolMagic begins every spool file, before the command id.
const spoolMagic = "yuzu-spool-1\x00"

// answer is one command's answer as far as the spool knows it.
type answer struct {
	id        string
	name      string   // the file's path; "" while nothing is kept
	file      *os.File // open for appending while the command runs
	kept      int      // RUNNING messages in the file: the first kept ones
	keptBytes int64
	full      bool    // a message was not kept: no later one is
	damaged   bool    // the file read back after a restart ended early
	rowCounts []int32 // rows in each RUNNING message queued since this run began
	restored  int     // RUNNING messages an earlier run left in the file
	pushed    int     // RUNNING messages queued, restored ones included
	high      int     // RUNNING messages any stream has taken: the first high

	timing, terminal *agentv1.CommandResponse
	// timingLeft and termLeft say a stream has taken them (so a break owes them
	// again, until the answer is confirmed); leftAt is when the terminal last left.
	timingLeft, termLeft bool
	leftAt               time.Time
	missing              int    // rows that may be missing: sent on a stream that broke, not kept
	errRow               string // the row saying so, when it was made after the terminal left
}

// handedMsg is a message of no answer, and when a stream took it.
type handedMsg struct {
	m  Msg
	at time.Time
}

// planItem is one step of what the next stream sends first: a range of an answer's
// kept RUNNING messages, or one message (of answer a, or lone).
type planItem struct {
	a        *answer
	from, to int // RUNNING messages [from, to) of a, read from its file
	m        *Msg
	lone     *handedMsg
}

// planReader reads an answer's file at the head of the plan.
type planReader struct {
	a    *answer
	f    *os.File
	r    *bufio.Reader
	next int // the index of the message it reads next
}

func NewSpool(dir string, perAnswer, total int64) (*Spool, error) {
	sp := &Spool{perAnswer: perAnswer, total: total, ConfirmDelay: confirmDelay, answers: map[string]*answer{}}
	if dir == "" || perAnswer <= 0 || total <= 0 {
		return sp, nil
	}
	if err := atomicfile.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("answer spool: %w", err)
	}
	if err := safefile.TrustedDir(dir); err != nil {
		return nil, fmt.Errorf("answer spool: directory %w", err)
	}
	sp.dir = dir
	return sp, nil
}

// fileName is the path of id's file.
func (sp *Spool) fileName(id string) string {
	sum := sha256.Sum256([]byte(id))
	return filepath.Join(sp.dir, hex.EncodeToString(sum[:20])+".rows")
}

// get returns id's answer, making it; sp.mu is held.
func (sp *Spool) get(id string) *answer {
	a := sp.answers[id]
	if a == nil {
		a = &answer{id: id}
		sp.answers[id] = a
		sp.order = append(sp.order, a)
	}
	return a
}

// rows records a RUNNING message of command id before it is queued, keeping it in the
// command's file while the bounds allow, and returns its index. Only the command's
// relay calls it, one message at a time.
func (sp *Spool) Rows(id, output string) int {
	sp.mu.Lock()
	a := sp.get(id)
	idx := a.pushed
	a.pushed++
	a.rowCounts = append(a.rowCounts, int32(strings.Count(output, "\n")+1))
	size := int64(len(output)) + 8
	keep := sp.dir != "" && !a.full && a.keptBytes+size <= sp.perAnswer && sp.used+size <= sp.total
	if keep {
		sp.used += size // reserved; given back if the write fails
	}
	f, name := a.file, a.name
	sp.mu.Unlock()
	var err error
	if keep {
		f, err = sp.appendRecord(f, name, id, output)
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if f != nil {
		a.file, a.name = f, sp.fileName(id)
	}
	if keep && err == nil {
		a.kept++
		a.keptBytes += size
		return idx
	}
	if keep {
		sp.used -= size
	}
	a.full = true
	return idx
}

// appendRecord writes one record to the file of command id: f when it is open, else
// the file name (left by an earlier run) opened for appending, else a new file with
// its header. It returns the file open for appending.
func (sp *Spool) appendRecord(f *os.File, name, id, output string) (*os.File, error) {
	if f == nil {
		var err error
		if name != "" {
			// The directory is trusted (newSpool): nobody else can have put a link
			// or a file there.
			f, err = os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
		} else {
			f, err = sp.createFile(id)
		}
		if err != nil {
			return nil, err
		}
	}
	return f, writeRecord(f, output)
}

// createFile makes id's file with its header.
func (sp *Spool) createFile(id string) (*os.File, error) {
	name := sp.fileName(id)
	f := sp.reuse(name)
	if f == nil {
		var err error
		f, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			// A file of that name is a leftover of an earlier run that recover did
			// not claim; this command's answer replaces it. (Removed only when
			// there: an unlink of nothing before every new file cost two failing
			// calls.)
			if err = os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
			f, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := writeRecord(f, spoolMagic+id); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// reuse renames a free file to name (replacing a leftover there, as createFile does)
// and returns it emptied, open for appending; nil when there is none to reuse. A crash
// before the header is written leaves the file with another command's header, which
// load refuses (and removes) as not this command's.
func (sp *Spool) reuse(name string) *os.File {
	for {
		sp.mu.Lock()
		n := len(sp.free)
		if n == 0 {
			sp.mu.Unlock()
			return nil
		}
		old := sp.free[n-1]
		sp.free = sp.free[:n-1]
		sp.mu.Unlock()
		if err := os.Rename(old, name); err != nil {
			_ = os.Remove(old)
			continue
		}
		// The directory is trusted (newSpool): nobody else can have put a link
		// there.
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0)
		if err != nil {
			_ = os.Remove(name)
			continue
		}
		return f
	}
}

// writeRecord writes one length- and CRC-framed record.
func writeRecord(w io.Writer, payload string) error {
	buf := make([]byte, 8+len(payload))
	binary.BigEndian.PutUint32(buf, uint32(len(payload)))
	binary.BigEndian.PutUint32(buf[4:], crc32.ChecksumIEEE([]byte(payload)))
	copy(buf[8:], payload)
	_, err := w.Write(buf)
	return err
}

// readRecord reads one record; io.EOF at a clean end, errDamaged for anything else.
func readRecord(r *bufio.Reader, limit int64) (string, error) {
	var head [8]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		if err == io.EOF {
			return "", io.EOF
		}
		return "", errDamaged
	}
	n := int64(binary.BigEndian.Uint32(head[:]))
	if n > limit {
		return "", errDamaged
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil || crc32.ChecksumIEEE(payload) != binary.BigEndian.Uint32(head[4:]) {
		return "", errDamaged
	}
	return string(payload), nil
}

var errDamaged = errors.New("answer spool: damaged record")

// timing records a command's timing message before it is queued.
func (sp *Spool) Timing(m *agentv1.CommandResponse) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.get(m.GetCommandId()).timing = m
}

// seal returns a command's terminal as it must go out: when rows may be missing
// (sent on a stream that broke, not kept), a FAILURE that says how many, with the
// error row that goes before it; otherwise resp as it is, and no row. A failure
// that keeps its own status (keep) gets the row only. The terminal is recorded for a
// later re-send.
func (sp *Spool) Seal(resp *agentv1.CommandResponse, keep bool) (errRow string, out *agentv1.CommandResponse) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	a := sp.get(resp.GetCommandId())
	out = resp
	if a.missing > 0 || a.damaged {
		errRow, out = sp.missingAnswer(a, resp)
		if keep {
			out = resp
		}
	}
	a.terminal = out
	if a.file != nil {
		// Nothing more is appended; the file stays for a re-send until confirmed.
		_ = a.file.Close()
		a.file = nil
	}
	return errRow, out
}

// missingAnswer is the error row and FAILURE terminal of an answer with rows that may
// be missing; sp.mu is held.
func (sp *Spool) missingAnswer(a *answer, resp *agentv1.CommandResponse) (string, *agentv1.CommandResponse) {
	var msg string
	if a.damaged {
		msg = fmt.Sprintf("rows after the first %d messages may be missing: the answer spool was damaged while the agent was down", a.kept)
	} else {
		msg = fmt.Sprintf("%d rows may be missing: the fleet connection broke while more of the answer was in flight than the spool keeps (%s per answer, %s in all)",
			a.missing, mib(sp.perAnswer), mib(sp.total))
	}
	return rows.Format("error", msg), &agentv1.CommandResponse{
		CommandId: resp.GetCommandId(),
		Status:    agentv1.CommandResponse_FAILURE,
		ExitCode:  1,
		Error:     &commonv1.ErrorDetail{Code: "rows_missing", Message: msg},
		SentAt:    resp.GetSentAt(),
	}
}

func mib(n int64) string { return strconv.FormatInt(n>>20, 10) + " MiB" }

// handed records that the current stream took m.
func (sp *Spool) Handed(m Msg, now time.Time) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	id := m.Resp.GetCommandId()
	a := sp.answers[id]
	switch {
	case m.Kind == KindRows && a != nil:
		a.high = max(a.high, m.Idx+1)
	case m.Kind == KindTiming && a != nil:
		a.timingLeft = true
	case m.Kind == KindTerminal && a != nil:
		a.termLeft, a.leftAt = true, now
	case m.Kind == KindProgress:
		// Not kept: sent again after a break it would be stale, and could follow the
		// terminal it preceded.
	default:
		sp.lone = append(sp.lone, &handedMsg{m: m, at: now})
	}
}

// confirm forgets every answer whose terminal left the current stream before cutoff,
// and every lone message that did, and returns the ids of the answers: their
// terminals are delivered.
func (sp *Spool) Confirm(cutoff time.Time) []string {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if len(sp.plan) > 0 {
		// A re-send is under way: what it carries left on an older stream until it
		// leaves again, so nothing is confirmed before it is over.
		return nil
	}
	var ids []string
	kept := sp.order[:0]
	for _, a := range sp.order {
		if a.termLeft && a.leftAt.Before(cutoff) {
			sp.drop(a)
			ids = append(ids, a.id)
			continue
		}
		kept = append(kept, a)
	}
	clear(sp.order[len(kept):])
	sp.order = kept
	lone := sp.lone[:0]
	for _, h := range sp.lone {
		if !h.at.Before(cutoff) {
			lone = append(lone, h)
		}
	}
	clear(sp.lone[len(lone):])
	sp.lone = lone
	return ids
}

// drop forgets a and removes its file; sp.mu is held.
func (sp *Spool) drop(a *answer) {
	delete(sp.answers, a.id)
	if a.file != nil {
		_ = a.file.Close()
		a.file = nil
	}
	if a.name != "" && !sp.keep(a) {
		_ = os.Remove(a.name)
	}
	sp.used -= a.keptBytes
}

// keep puts a's file aside for reuse when there is room and it is small; sp.mu is
// held.
func (sp *Spool) keep(a *answer) bool {
	if len(sp.free) >= maxFree || a.keptBytes > maxFreeBytes {
		return false
	}
	sp.freeSeq++
	name := filepath.Join(sp.dir, "free-"+strconv.Itoa(sp.freeSeq)+".rows")
	if os.Rename(a.name, name) != nil {
		return false
	}
	sp.free = append(sp.free, name)
	return true
}

// unconfirmed reports whether anything that left waits for confirmation.
func (sp *Spool) Unconfirmed() bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if len(sp.lone) > 0 {
		return true
	}
	for _, a := range sp.order {
		if a.high > 0 || a.timingLeft || a.termLeft {
			return true
		}
	}
	return false
}

// broken plans the re-send after a stream ended: every answer that has had a message
// on a stream and is not confirmed, whole, in the order of their first messages, then
// the lone messages. It plans from the answers, not from the last plan, so a break
// during a re-send loses nothing of it. Rows that left and were not kept count as
// missing.
func (sp *Spool) Broken() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.closeReader()
	clear(sp.plan)
	sp.plan = sp.plan[:0]
	for _, a := range sp.order {
		if a.high == 0 && !a.timingLeft && !a.termLeft {
			continue
		}
		if a.high > a.kept {
			a.missing = max(a.missing, a.rowsIn(a.kept, a.high))
		}
		if n := min(a.kept, a.high); n > 0 {
			sp.plan = append(sp.plan, planItem{a: a, to: n})
		}
		if a.timingLeft && a.timing != nil {
			sp.plan = append(sp.plan, planItem{a: a, m: &Msg{Resp: a.timing, Kind: KindTiming}})
		}
		if a.termLeft && a.terminal != nil {
			// The terminal that left is the command's one terminal: it goes again as
			// it was, never as another, and the rows that cannot go again are said
			// in an error row before it.
			if (a.missing > 0 || a.damaged) && a.errRow == "" {
				a.errRow, _ = sp.missingAnswer(a, a.terminal)
			}
			if a.errRow != "" {
				sp.plan = append(sp.plan, planItem{a: a, m: &Msg{Resp: Running(a.id, a.errRow), Kind: KindLone}})
			}
			sp.plan = append(sp.plan, planItem{a: a, m: &Msg{Resp: a.terminal, Kind: KindTerminal}})
		}
	}
	for _, h := range sp.lone {
		sp.plan = append(sp.plan, planItem{m: &h.m, lone: h})
	}
}

// next returns the next message of the plan, or false when the plan is done. A file
// that cannot be read any more ends its range early: that answer's remaining rows
// count as missing.
func (sp *Spool) Next() (Msg, bool) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for len(sp.plan) > 0 {
		it := &sp.plan[0]
		if it.m != nil {
			return *it.m, true
		}
		if it.from >= it.to {
			sp.advance()
			continue
		}
		out, err := sp.read(it.a, it.from)
		if err != nil {
			// What cannot be read again is missing from the re-send; its terminal,
			// later in the plan, says so.
			it.a.missing = max(it.a.missing, it.a.rowsIn(it.from, it.to))
			it.a.damaged = it.a.damaged || it.from < it.a.restored
			sp.advance()
			continue
		}
		return Msg{Resp: Running(it.a.id, out), Kind: KindRows, Idx: it.from}, true
	}
	return Msg{}, false
}

// pop removes the plan's head message, which the current stream took at now.
func (sp *Spool) Pop(now time.Time) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if len(sp.plan) == 0 {
		return
	}
	it := &sp.plan[0]
	if it.m != nil {
		switch {
		case it.lone != nil:
			it.lone.at = now
		case it.m.Kind == KindTerminal:
			it.a.leftAt = now
		}
		sp.advance()
		return
	}
	it.from++
	if it.from >= it.to {
		sp.advance()
	}
}

// advance drops the plan's head; sp.mu is held.
func (sp *Spool) advance() {
	if it := sp.plan[0]; it.a != nil && sp.reader != nil && sp.reader.a == it.a {
		sp.closeReader()
	}
	sp.plan[0] = planItem{}
	sp.plan = sp.plan[1:]
}

// read returns message idx of a from its file; sp.mu is held.
func (sp *Spool) read(a *answer, idx int) (string, error) {
	if sp.reader == nil || sp.reader.a != a || sp.reader.next > idx {
		sp.closeReader()
		f, _, err := safefile.Open(a.name)
		if err != nil {
			return "", err
		}
		r := &planReader{a: a, f: f, r: bufio.NewReaderSize(f, 64<<10)}
		if _, err := readRecord(r.r, maxSpoolHeader); err != nil {
			f.Close()
			return "", errDamaged
		}
		sp.reader = r
	}
	for {
		out, err := readRecord(sp.reader.r, sp.perAnswer)
		if err != nil {
			return "", err
		}
		sp.reader.next++
		if sp.reader.next-1 == idx {
			return out, nil
		}
	}
}

// maxSpoolHeader bounds the header record: the magic and a command id.
const maxSpoolHeader = int64(len(spoolMagic)) + 1024

func (sp *Spool) closeReader() {
	if sp.reader != nil {
		sp.reader.f.Close()
		sp.reader = nil
	}
}

// rowsIn is how many rows RUNNING messages [from, to) hold, as far as this run knows:
// a message restored from an earlier run's file counts as one row at least.
func (a *answer) rowsIn(from, to int) int {
	n := 0
	for i := from; i < to; i++ {
		if j := i - a.restored; j >= 0 && j < len(a.rowCounts) {
			n += int(a.rowCounts[j])
		} else {
			n++
		}
	}
	return n
}

// planned reports whether a re-send is still under way.
func (sp *Spool) Planned() bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return len(sp.plan) > 0
}

// restore takes up the file an earlier run left for command id, whose terminal is
// terminal (nil: the command was interrupted and its answer is still to be made), and
// plans its kept messages, then the terminal when there is one, for the first
// stream. It reports how many RUNNING messages it found.
func (sp *Spool) Restore(id string, terminal *agentv1.CommandResponse) int {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	a := sp.get(id)
	if sp.dir != "" {
		sp.load(a)
	}
	a.high, a.pushed, a.restored = a.kept, a.kept, a.kept
	if terminal != nil {
		a.terminal, a.termLeft = terminal, true
	}
	return a.kept
}

// load counts the records of a's file left by an earlier run; sp.mu is held.
func (sp *Spool) load(a *answer) {
	name := sp.fileName(a.id)
	f, _, err := safefile.Open(name)
	if err != nil {
		return
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	head, err := readRecord(r, maxSpoolHeader)
	if err != nil || head != spoolMagic+a.id {
		_ = os.Remove(name)
		return
	}
	a.name = name
	for {
		out, err := readRecord(r, sp.perAnswer)
		if err == io.EOF {
			break
		}
		if err != nil || a.keptBytes+int64(len(out))+8 > sp.perAnswer {
			a.damaged = true
			break
		}
		a.kept++
		a.keptBytes += int64(len(out)) + 8
	}
	sp.used += a.keptBytes
	// Messages after a damaged record are not re-sent; none are appended either.
	a.full = a.damaged
}

// sweep removes the files no restored answer claimed.
func (sp *Spool) Sweep() {
	if sp.dir == "" {
		return
	}
	des, err := os.ReadDir(sp.dir)
	if err != nil {
		return
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	claimed := map[string]bool{}
	for _, a := range sp.order {
		if a.name != "" {
			claimed[filepath.Base(a.name)] = true
		}
	}
	for _, de := range des {
		if !claimed[de.Name()] {
			_ = os.Remove(filepath.Join(sp.dir, de.Name()))
		}
	}
}

// close releases the open files; the files stay for the next start.
func (sp *Spool) Close() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.closeReader()
	for _, a := range sp.order {
		if a.file != nil {
			_ = a.file.Close()
			a.file = nil
		}
	}
}
