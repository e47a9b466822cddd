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
	"os"
	"path/filepath"
	"slices"
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
// The RUNNING messages are kept in a log (spoolDir, numbered segment files), each
// record naming its command, written before the message is queued, so they also
// survive a restart of the agent: the next start sends them again ahead of the
// recorded terminal (or of the interrupted answer). One append per message and no new
// file per command: a file made, renamed or removed per command was most of the
// agent's cost under a flood of small commands (each a directory change the
// filesystem journals, which the command journal's fsync then waits for). A segment is
// removed once every answer with records in it has been confirmed. The log is bounded
// per answer and in all (its segments' bytes, what confirmed answers left in a segment
// still in use included). A message past either bound is sent but not kept: should
// the stream break after it left, it cannot be sent again, and the command's terminal
// says how many rows may be missing (FAILURE, rows_missing) instead of SUCCESS.
type Spool struct {
	dir          string // "" when nothing is kept on disk
	perAnswer    int64
	total        int64
	ConfirmDelay time.Duration

	mu      sync.Mutex
	used    int64 // bytes in the segments
	answers map[string]*answer
	order   []*answer // by first message
	lone    []*handedMsg
	plan    []planItem

	// active is the segment new records are appended to (nil: the next record
	// starts one); segs are every segment on disk this run knows, by sequence.
	active  *logSeg
	segs    map[uint64]*logSeg
	nextSeq uint64
	// found are the records an earlier run left, by command, until Restore claims
	// them or Sweep drops them; damaged says a segment it left was damaged before
	// its end (see load).
	found   map[string]*foundAnswer
	damaged bool
}

// logSeg is one segment file of the log.
type logSeg struct {
	seq  uint64
	name string
	f    *os.File // read with ReadAt; appended to while active
	size int64
	live int // answers kept with records in it
}

// logRef is where one kept RUNNING message lies: its record at off in seg, whose
// payload (the id's length, the id, the message) is n bytes.
type logRef struct {
	seg *logSeg
	off int64
	n   int32
}

// foundAnswer is what an earlier run's log holds of one command.
type foundAnswer struct {
	refs []logRef
	torn bool // its last record was cut short
}

// segLimit is the size past which a segment takes no more records (a single larger
// record still goes, alone, in a new one): big enough that segments are rare, small
// enough that one kept answer pins little of what the confirmed ones left.
const segLimit = 4 << 20

// confirmDelay is how long after an answer's terminal left a heartbeat must have been
// sent for its answer to confirm the terminal: the server's transport read the
// terminal before the heartbeat (one connection, in order), and this leaves the
// server's command stream a moment to take it from there.
const confirmDelay = time.Second

// logMagic is the first record of every segment. legacyMagic began the one file per
// command of agents before the log; such a file is still read (Restore), once.
const (
	logMagic    = "yuzu-spool-log-1\x00"
	legacyMagic = "yuzu-spool-1\x00"
)

// answer is one command's answer as far as the spool knows it.
type answer struct {
	id        string
	refs      []logRef  // the kept RUNNING messages: the first len(refs)
	segs      []*logSeg // the segments refs lie in, each once, oldest first
	keptBytes int64
	full      bool    // a message was not kept: no later one is
	damaged   bool    // the log read back after a restart ended early
	rowCounts []int32 // rows in each RUNNING message queued since this run began
	restored  int     // RUNNING messages an earlier run left in the log
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

// kept is how many RUNNING messages the log holds of a: the first kept ones.
func (a *answer) kept() int { return len(a.refs) }

// handedMsg is a message of no answer, and when a stream took it.
type handedMsg struct {
	m  Msg
	at time.Time
}

// planItem is one step of what the next stream sends first: a range of an answer's
// kept RUNNING messages, or one message (of answer a, or lone).
type planItem struct {
	a        *answer
	from, to int // RUNNING messages [from, to) of a, read from the log
	m        *Msg
	lone     *handedMsg
}

// NewSpool opens the spool in dir, reading what an earlier run left there; perAnswer
// and total bound it. With no dir or a bound of 0 nothing is kept.
func NewSpool(dir string, perAnswer, total int64) (*Spool, error) {
	sp := &Spool{perAnswer: perAnswer, total: total, ConfirmDelay: confirmDelay, answers: map[string]*answer{},
		segs: map[uint64]*logSeg{}, found: map[string]*foundAnswer{}, nextSeq: 1}
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
	sp.loadLog()
	return sp, nil
}

// segName is the name of segment seq.
func segName(seq uint64) string { return fmt.Sprintf("log-%016x.rows", seq) }

// parseSegName returns the sequence a segment's name holds.
func parseSegName(name string) (uint64, bool) {
	rest, okPrefix := strings.CutPrefix(name, "log-")
	hexPart, okSuffix := strings.CutSuffix(rest, ".rows")
	if !okPrefix || !okSuffix || len(hexPart) != 16 {
		return 0, false
	}
	seq, err := strconv.ParseUint(hexPart, 16, 64)
	return seq, err == nil && seq > 0
}

// loadLog reads the segments an earlier run left, oldest first, into found. The
// directory is trusted (NewSpool), and each file is opened without following a link
// and must be a regular file. A segment that ends inside a record lost the last write
// of an agent killed while making it (that message was never queued, being written
// first) or of a machine that lost power: the record's command, when its id is there
// to read, counts as damaged. A record that fails its check, or a segment that cannot
// be read, is damage too; since nobody can tell whose records followed it, every
// answer restored from this log then says that rows may be missing.
func (sp *Spool) loadLog() {
	des, err := os.ReadDir(sp.dir)
	if err != nil {
		return
	}
	var seqs []uint64
	for _, de := range des {
		if seq, ok := parseSegName(de.Name()); ok {
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	for _, seq := range seqs {
		sp.nextSeq = max(sp.nextSeq, seq+1)
		seg := &logSeg{seq: seq, name: filepath.Join(sp.dir, segName(seq))}
		f, fi, err := safefile.Open(seg.name)
		if err != nil {
			sp.damaged = true
			continue
		}
		seg.f, seg.size = f, fi.Size()
		sp.segs[seq] = seg
		sp.used += seg.size
		sp.readSeg(seg, bufio.NewReaderSize(io.LimitReader(f, seg.size), 64<<10))
	}
}

// readSeg reads one segment's records into found.
func (sp *Spool) readSeg(seg *logSeg, r *bufio.Reader) {
	limit := sp.perAnswer + maxIDBytes + binary.MaxVarintLen64
	if head, err := readRecord(r, int64(len(logMagic))); err != nil || string(head) != logMagic {
		sp.damaged = true
		return
	}
	off := int64(8 + len(logMagic))
	for {
		payload, err := readRecord(r, limit)
		if err == io.EOF {
			return
		}
		if err != nil {
			if errors.Is(err, errTorn) {
				if id, _, ok := splitPayload(payload); ok {
					sp.foundOf(id).torn = true
					return
				}
			}
			sp.damaged = true
			return
		}
		id, _, ok := splitPayload(payload)
		if !ok {
			sp.damaged = true
			return
		}
		fa := sp.foundOf(id)
		fa.refs = append(fa.refs, logRef{seg: seg, off: off, n: int32(len(payload))})
		off += int64(8 + len(payload))
	}
}

func (sp *Spool) foundOf(id string) *foundAnswer {
	fa := sp.found[id]
	if fa == nil {
		fa = &foundAnswer{}
		sp.found[id] = fa
	}
	return fa
}

// maxIDBytes bounds a command id in a record (the session takes none longer).
const maxIDBytes = 1024

// logPayload is a record's payload: the id's length, the id, the message.
func logPayload(id, output string) []byte {
	b := make([]byte, 0, binary.MaxVarintLen64+len(id)+len(output))
	b = binary.AppendUvarint(b, uint64(len(id)))
	b = append(b, id...)
	return append(b, output...)
}

// splitPayload is logPayload's inverse; ok is false when the id is not all there.
func splitPayload(p []byte) (id, output string, ok bool) {
	n, k := binary.Uvarint(p)
	if k <= 0 || n > maxIDBytes || uint64(len(p)-k) < n {
		return "", "", false
	}
	return string(p[k : k+int(n)]), string(p[k+int(n):]), true
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

// Rows records a RUNNING message of command id before it is queued, keeping it in the
// log while the bounds allow, and returns its index. Only the command's relay calls
// it, one message at a time.
func (sp *Spool) Rows(id, output string) int {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	a := sp.get(id)
	idx := a.pushed
	a.pushed++
	a.rowCounts = append(a.rowCounts, int32(strings.Count(output, "\n")+1))
	size := int64(len(output)) + 8
	if sp.dir == "" || a.full || a.keptBytes+size > sp.perAnswer {
		a.full = true
		return idx
	}
	ref, err := sp.appendLog(id, output)
	if err != nil {
		a.full = true
		return idx
	}
	sp.hold(a, ref)
	a.keptBytes += size
	return idx
}

// hold adds ref to a's kept messages; sp.mu is held.
func (sp *Spool) hold(a *answer, ref logRef) {
	a.refs = append(a.refs, ref)
	if n := len(a.segs); n == 0 || a.segs[n-1] != ref.seg {
		a.segs = append(a.segs, ref.seg)
		ref.seg.live++
	}
}

// release gives back a's hold on its segments, removing each one nobody else holds
// (but the active one); sp.mu is held.
func (sp *Spool) release(a *answer) {
	for _, seg := range a.segs {
		seg.live--
		if seg.live <= 0 && seg != sp.active {
			sp.removeSeg(seg)
		}
	}
	a.segs, a.refs = nil, nil
}

// removeSeg closes and removes seg; sp.mu is held.
func (sp *Spool) removeSeg(seg *logSeg) {
	if seg.f != nil {
		_ = seg.f.Close()
		seg.f = nil
	}
	_ = os.Remove(seg.name)
	sp.used -= seg.size
	delete(sp.segs, seg.seq)
}

var errSpoolFull = errors.New("answer spool: full")

// appendLog appends one record to the active segment, starting a new one when there
// is none or it is past segLimit; sp.mu is held. A write that fails is cut off again,
// so that the segment ends on a whole record; when even that fails, the segment takes
// no more.
func (sp *Spool) appendLog(id, output string) (logRef, error) {
	payload := logPayload(id, output)
	size := int64(8 + len(payload))
	if sp.used+size > sp.total {
		return logRef{}, errSpoolFull
	}
	if sp.active != nil && sp.active.size+size > segLimit {
		sp.retire()
	}
	if sp.active == nil {
		if err := sp.newSeg(); err != nil {
			return logRef{}, err
		}
	}
	seg := sp.active
	if err := writeRecord(seg.f, string(payload)); err != nil {
		if seg.f.Truncate(seg.size) != nil {
			sp.retire()
		}
		return logRef{}, err
	}
	ref := logRef{seg: seg, off: seg.size, n: int32(len(payload))}
	seg.size += size
	sp.used += size
	return ref, nil
}

// retire ends the active segment: the next record starts another. It is removed now
// when no answer holds it; sp.mu is held.
func (sp *Spool) retire() {
	seg := sp.active
	sp.active = nil
	if seg != nil && seg.live <= 0 {
		sp.removeSeg(seg)
	}
}

// newSeg makes the next segment, with its first record, the active one; sp.mu is
// held. The directory is trusted (NewSpool) and the name new: O_EXCL refuses
// anything already there.
func (sp *Spool) newSeg() error {
	seq := sp.nextSeq
	sp.nextSeq++
	name := filepath.Join(sp.dir, segName(seq))
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if err := writeRecord(f, logMagic); err != nil {
		f.Close()
		_ = os.Remove(name)
		return err
	}
	seg := &logSeg{seq: seq, name: name, f: f, size: int64(8 + len(logMagic))}
	sp.segs[seq] = seg
	sp.used += seg.size
	sp.active = seg
	return nil
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

// readRecord reads one record: io.EOF at a clean end; errTorn, with what there is of
// the payload, when the input ends inside it; errDamaged for anything else.
func readRecord(r *bufio.Reader, limit int64) ([]byte, error) {
	var head [8]byte
	if n, err := io.ReadFull(r, head[:]); err != nil {
		if n == 0 && err == io.EOF {
			return nil, io.EOF
		}
		return nil, errTorn
	}
	n := int64(binary.BigEndian.Uint32(head[:]))
	if n > limit {
		return nil, errDamaged
	}
	payload := make([]byte, n)
	if got, err := io.ReadFull(r, payload); err != nil {
		return payload[:got], errTorn
	}
	if crc32.ChecksumIEEE(payload) != binary.BigEndian.Uint32(head[4:]) {
		return nil, errDamaged
	}
	return payload, nil
}

var (
	errDamaged = errors.New("answer spool: damaged record")
	errTorn    = errors.New("answer spool: record cut short")
)

// Timing records a command's timing message before it is queued.
func (sp *Spool) Timing(m *agentv1.CommandResponse) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.get(m.GetCommandId()).timing = m
}

// Seal returns a command's terminal as it must go out: when rows may be missing
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
	return errRow, out
}

// missingAnswer is the error row and FAILURE terminal of an answer with rows that may
// be missing; sp.mu is held.
func (sp *Spool) missingAnswer(a *answer, resp *agentv1.CommandResponse) (string, *agentv1.CommandResponse) {
	var msg string
	if a.damaged {
		msg = fmt.Sprintf("rows after the first %d messages may be missing: the answer spool was damaged while the agent was down", a.kept())
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

// Handed records that the current stream took m.
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

// Confirm forgets every answer whose terminal left the current stream before cutoff,
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

// drop forgets a, and its records with it; sp.mu is held.
func (sp *Spool) drop(a *answer) {
	delete(sp.answers, a.id)
	sp.release(a)
}

// Unconfirmed reports whether anything that left waits for confirmation.
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

// Broken plans the re-send after a stream ended: every answer that has had a message
// on a stream and is not confirmed, whole, in the order of their first messages, then
// the lone messages. It plans from the answers, not from the last plan, so a break
// during a re-send loses nothing of it. Rows that left and were not kept count as
// missing.
func (sp *Spool) Broken() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	clear(sp.plan)
	sp.plan = sp.plan[:0]
	for _, a := range sp.order {
		if a.high == 0 && !a.timingLeft && !a.termLeft {
			continue
		}
		if a.high > a.kept() {
			a.missing = max(a.missing, a.rowsIn(a.kept(), a.high))
		}
		if n := min(a.kept(), a.high); n > 0 {
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

// Next returns the next message of the plan, or false when the plan is done. A record
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

// Pop removes the plan's head message, which the current stream took at now.
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
	sp.plan[0] = planItem{}
	sp.plan = sp.plan[1:]
}

// read returns kept message idx of a from the log, checked again; sp.mu is held.
func (sp *Spool) read(a *answer, idx int) (string, error) {
	ref := a.refs[idx]
	if ref.seg.f == nil {
		return "", errDamaged
	}
	buf := make([]byte, 8+int(ref.n))
	if _, err := ref.seg.f.ReadAt(buf, ref.off); err != nil {
		return "", err
	}
	payload := buf[8:]
	if binary.BigEndian.Uint32(buf) != uint32(ref.n) || crc32.ChecksumIEEE(payload) != binary.BigEndian.Uint32(buf[4:]) {
		return "", errDamaged
	}
	id, out, ok := splitPayload(payload)
	if !ok || id != a.id {
		return "", errDamaged
	}
	return out, nil
}

// rowsIn is how many rows RUNNING messages [from, to) hold, as far as this run knows:
// a message restored from an earlier run's log counts as one row at least.
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

// Planned reports whether a re-send is still under way.
func (sp *Spool) Planned() bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return len(sp.plan) > 0
}

// Restore takes up what an earlier run left of command id, whose terminal is terminal
// (nil: the command was interrupted and its answer is still to be made), and plans
// its kept messages, then the terminal when there is one, for the first stream. It
// reports how many RUNNING messages it found.
func (sp *Spool) Restore(id string, terminal *agentv1.CommandResponse) int {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	a := sp.get(id)
	if sp.dir != "" {
		sp.load(a)
	}
	a.restored = a.kept()
	a.high, a.pushed = a.restored, a.restored
	if terminal != nil {
		a.terminal, a.termLeft = terminal, true
	}
	return a.restored
}

// load claims a's records of an earlier run: those of the log, else those of a file of
// its own that an agent before the log left, copied into the log; sp.mu is held.
func (sp *Spool) load(a *answer) {
	if fa := sp.found[a.id]; fa != nil {
		delete(sp.found, a.id)
		idBytes := int64(len(logPayload(a.id, "")))
		for _, ref := range fa.refs {
			size := int64(ref.n) - idBytes + 8 // as Rows counts it: the message and its frame
			if a.keptBytes+size > sp.perAnswer {
				a.damaged = true
				break
			}
			sp.hold(a, ref)
			a.keptBytes += size
		}
		a.damaged = a.damaged || fa.torn
	} else {
		sp.loadLegacy(a)
	}
	a.damaged = a.damaged || sp.damaged
	// Messages after damage are not re-sent; none are appended either.
	a.full = a.damaged
}

// loadLegacy copies the records of a's own file, left by an agent before the log,
// into the log, and removes the file; sp.mu is held.
func (sp *Spool) loadLegacy(a *answer) {
	sum := sha256.Sum256([]byte(a.id))
	name := filepath.Join(sp.dir, hex.EncodeToString(sum[:20])+".rows")
	f, _, err := safefile.Open(name)
	if err != nil {
		return
	}
	defer func() {
		f.Close()
		_ = os.Remove(name)
	}()
	r := bufio.NewReaderSize(f, 64<<10)
	head, err := readRecord(r, int64(len(legacyMagic))+maxIDBytes)
	if err != nil || string(head) != legacyMagic+a.id {
		return
	}
	for {
		out, err := readRecord(r, sp.perAnswer)
		if err == io.EOF {
			return
		}
		if err != nil || a.keptBytes+int64(len(out))+8 > sp.perAnswer {
			a.damaged = true
			return
		}
		ref, err := sp.appendLog(a.id, string(out))
		if err != nil {
			a.damaged = true
			return
		}
		sp.hold(a, ref)
		a.keptBytes += int64(len(out)) + 8
	}
}

// Sweep drops what no restored answer claimed, and removes the files that hold
// nothing kept: segments no answer holds, and anything else in the directory.
func (sp *Spool) Sweep() {
	if sp.dir == "" {
		return
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	clear(sp.found)
	sp.damaged = false
	for _, seg := range sp.segs {
		if seg.live <= 0 && seg != sp.active {
			sp.removeSeg(seg)
		}
	}
	des, err := os.ReadDir(sp.dir)
	if err != nil {
		return
	}
	for _, de := range des {
		if seq, ok := parseSegName(de.Name()); ok && sp.segs[seq] != nil {
			continue
		}
		_ = os.Remove(filepath.Join(sp.dir, de.Name()))
	}
}

// Close releases the open files; the files stay for the next start.
func (sp *Spool) Close() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for _, seg := range sp.segs {
		if seg.f != nil {
			_ = seg.f.Close()
			seg.f = nil
		}
	}
	sp.active = nil
}
