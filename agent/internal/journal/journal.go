// Package journal keeps the agent's durable record of fleet commands: which ones have
// started, the terminal answer of each finished one (so a repeated command id is
// answered from the record instead of running twice, also after a restart), and which
// answers have not reached the fleet server yet (so none is lost when a connection
// drops or the agent stops).
//
// The record lives in its own directory (mode 0700) as numbered segment files (mode
// 0600). Each flush writes the records gathered since the previous one as a new
// segment through sdk/atomicfile, so a segment is either whole or absent; many callers
// waiting at once share one write (group commit).
//
// Two records are waited for. Finish returns once a terminal answer is written, so an
// answer never leaves before the record that replays it. A start record is written at
// once and its caller waits for it before the command runs (Started), so a command
// the agent was killed in is always known after the restart: answered there, never
// run again and never left silent. An accept record (a command that waits before it
// starts) rides with the next write, so a command killed while it waited is known to
// have never run. A delivery record (MarkSent) rides with
// the next flush, or goes on its own once it has waited lazyDelay (0.1 s), so a
// command costs two writes rather than three; a crash in that moment loses it, and the
// answer counts as unsent and is sent once more after the restart, which a fleet
// server takes as a repeat of the same terminal answer.
//
// When the segments hold far more records than the live state needs, or there are
// many more of them than the live state warrants, the live state is written as one new
// segment and the older ones are removed. Both bounds grow with the live state, so
// the cost of rewriting it is spread over a number of commands proportional to its
// size. The directory must be a real directory owned by root or the agent's user and
// writable by nobody else: whoever could write there could make the agent replay
// forged answers.
package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/safefile"
)

// Limits of the record. They bound the memory and disk the journal can take, whatever
// the fleet server sends.
const (
	// MaxEntries is how many finished commands are remembered; the oldest are
	// forgotten first.
	MaxEntries = 10000
	// MaxResponseBytes bounds one stored answer; the caller slims larger ones.
	MaxResponseBytes = 4 << 10
	// MaxIDBytes bounds a command id.
	MaxIDBytes = 256
	// maxSegmentBytes bounds the read of one segment: MaxEntries full answers, base64
	// encoded, fit.
	maxSegmentBytes = 64 << 20
	// maxSegments is how many segments may pile up before a compaction when the live
	// state is small; segmentLimit raises it with the live state.
	maxSegments = 128
	// lazyDelay is how long a delivery record waits for a flush to ride with
	// before it is written on its own. It bounds the moment a crash can lose such a
	// record (see the package doc).
	lazyDelay = 100 * time.Millisecond
)

// Entry is the outcome of one finished command.
type Entry struct {
	// ID is the command id.
	ID string
	// Response is the terminal answer as it goes on the wire (an encoded message).
	Response []byte
	// Replay says a repeated command id is answered with Response. Answers that do
	// not settle the command (refused because the agent was busy or stopping) are
	// kept only until delivered, and a repeat runs normally.
	Replay bool
	// Sent says Response has been handed to a connection.
	Sent bool
	// At is when the command finished.
	At time.Time
}

// record is one line of a segment.
type record struct {
	Op     string `json:"op"` // "accept", "start", "done" or "sent"
	ID     string `json:"id"`
	At     int64  `json:"at,omitempty"` // Unix milliseconds
	Resp   []byte `json:"resp,omitempty"`
	Replay bool   `json:"replay,omitempty"`
}

const (
	opAccept = "accept"
	opStart  = "start"
	opDone   = "done"
	opSent   = "sent"
)

// Journal is the durable record. Its methods are safe for concurrent use.
type Journal struct {
	dir   string
	delay time.Duration // lazyDelay; shorter or longer in tests
	wake  chan struct{}
	done  chan struct{} // closed when the writer has stopped

	mu          sync.Mutex
	entries     map[string]*Entry
	order       []string // finished ids, oldest first (may hold ids already forgotten)
	accepted    map[string]bool
	started     map[string]bool
	interrupted []string
	notStarted  []string
	pending     []record
	waiters     []chan error
	due         bool        // the writer is to flush pending now
	timer       *time.Timer // set while lazy records wait for lazyDelay
	timerGen    uint64      // tells a stale timer from the one in timer
	closed      bool
	warnings    []string

	// Owned by the writer goroutine (and by Open before it starts); read by tests
	// after the writer has stopped.
	nextSeq     uint64
	segments    []uint64 // sequence numbers on disk, ascending
	written     int      // records on disk
	compactions int      // compactions since Open, the one in Open included
	lastErr     error    // of the last flush; read by Close after done is closed
}

// segmentPrefix and segmentSuffix frame a segment's name: seg-<16 hex digits>.jsonl.
const (
	segmentPrefix = "seg-"
	segmentSuffix = ".jsonl"
)

func segmentName(seq uint64) string {
	return fmt.Sprintf("%s%016x%s", segmentPrefix, seq, segmentSuffix)
}

// parseSegmentName returns the sequence number of a segment file name.
func parseSegmentName(name string) (uint64, bool) {
	hex, ok := strings.CutPrefix(name, segmentPrefix)
	if !ok {
		return 0, false
	}
	hex, ok = strings.CutSuffix(hex, segmentSuffix)
	if !ok || len(hex) != 16 {
		return 0, false
	}
	seq, err := strconv.ParseUint(hex, 16, 64)
	return seq, err == nil
}

// Open loads the journal in dir, creating the directory (mode 0700) when missing, and
// starts its writer. Commands that had started but not finished when the agent last
// stopped are reported by Interrupted. Damaged segments are skipped and reported by
// Warnings; a directory that is not private to the agent is an error.
func Open(dir string) (*Journal, error) { return openWith(dir, lazyDelay) }

// openWith is Open with the time delivery records may wait for a flush.
func openWith(dir string, delay time.Duration) (*Journal, error) {
	if err := atomicfile.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("journal: %s is %s, not a directory", dir, safefile.Describe(fi.Mode()))
	}
	// The directory and every parent: whoever could write to a parent could swap
	// the directory the later reads and writes go through.
	if err := safefile.TrustedDir(dir); err != nil {
		return nil, fmt.Errorf("journal: directory %w", err)
	}
	j := &Journal{
		dir:      dir,
		delay:    delay,
		entries:  map[string]*Entry{},
		accepted: map[string]bool{},
		started:  map[string]bool{},
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	if err := j.load(); err != nil {
		return nil, err
	}
	for id := range j.started {
		j.interrupted = append(j.interrupted, id)
	}
	slices.Sort(j.interrupted)
	for id := range j.accepted {
		j.notStarted = append(j.notStarted, id)
	}
	slices.Sort(j.notStarted)
	// What was interrupted or never started is now the caller's to settle; their
	// records go at the next compaction.
	clear(j.started)
	clear(j.accepted)
	if len(j.segments) > 1 {
		if err := j.compact(); err != nil {
			return nil, err
		}
	}
	go j.writer()
	return j, nil
}

// load reads every segment in order and removes temp files that an interrupted write
// left behind.
func (j *Journal) load() error {
	des, err := os.ReadDir(j.dir)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	for _, de := range des {
		name := de.Name()
		if seq, ok := parseSegmentName(name); ok {
			j.segments = append(j.segments, seq)
			continue
		}
		if base, _, ok := strings.Cut(name, ".tmp."); ok {
			if _, isSeg := parseSegmentName(base); isSeg && atomicfile.IsTempName(base, name) {
				_ = os.Remove(filepath.Join(j.dir, name))
				continue
			}
		}
		j.warnings = append(j.warnings, fmt.Sprintf("ignored unexpected entry %s", filepath.Join(j.dir, name)))
	}
	slices.Sort(j.segments)
	for _, seq := range j.segments {
		j.nextSeq = seq + 1
		path := filepath.Join(j.dir, segmentName(seq))
		data, err := safefile.ReadFile(path, maxSegmentBytes)
		if err != nil {
			j.warnings = append(j.warnings, fmt.Sprintf("skipped segment: %v", err))
			continue
		}
		n, err := j.apply(data)
		j.written += n
		if err != nil {
			j.warnings = append(j.warnings, fmt.Sprintf("segment %s damaged after %d records: %v", path, n, err))
		}
	}
	return nil
}

// apply replays the records of one segment onto the state.
func (j *Journal) apply(data []byte) (int, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxSegmentBytes)
	n := 0
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return n, err
		}
		if r.ID == "" || len(r.ID) > MaxIDBytes || len(r.Resp) > MaxResponseBytes {
			return n, fmt.Errorf("record %d out of bounds", n+1)
		}
		switch r.Op {
		case opAccept:
			j.accepted[r.ID] = true
		case opStart:
			delete(j.accepted, r.ID)
			j.started[r.ID] = true
		case opDone:
			delete(j.accepted, r.ID)
			delete(j.started, r.ID)
			j.remember(&Entry{ID: r.ID, Response: r.Resp, Replay: r.Replay, At: time.UnixMilli(r.At)})
		case opSent:
			j.markSent(r.ID)
		default:
			return n, fmt.Errorf("record %d has unknown op %q", n+1, r.Op)
		}
		n++
	}
	return n, sc.Err()
}

// remember adds a finished command, forgetting the oldest beyond MaxEntries.
func (j *Journal) remember(e *Entry) {
	if _, ok := j.entries[e.ID]; !ok {
		j.order = append(j.order, e.ID)
	}
	j.entries[e.ID] = e
	for len(j.entries) > MaxEntries {
		id := j.order[0]
		j.order = j.order[1:]
		delete(j.entries, id)
	}
	// order keeps ids of entries that were forgotten after delivery; trim it when
	// it has grown well past the live set.
	if len(j.order) > 2*MaxEntries {
		j.order = slices.DeleteFunc(j.order, func(id string) bool { _, ok := j.entries[id]; return !ok })
	}
}

func (j *Journal) markSent(id string) {
	e, ok := j.entries[id]
	if !ok {
		return
	}
	if !e.Replay {
		delete(j.entries, id)
		return
	}
	e.Sent = true
}

// Warnings returns what Open found wrong but worked around (damaged segments, stray
// files), for the log.
func (j *Journal) Warnings() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.warnings)
}

// Interrupted returns the ids of commands that had started but not finished when the
// agent last stopped, sorted.
func (j *Journal) Interrupted() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.interrupted)
}

// NotStarted returns the ids of commands the agent had accepted but not yet handed to
// their plugin (waiting for a stagger, a delay or a slot) when it last stopped, sorted.
// They never ran.
func (j *Journal) NotStarted() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.notStarted)
}

// Lookup returns the outcome of a finished command whose answer is to be replayed.
func (j *Journal) Lookup(id string) (Entry, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	e, ok := j.entries[id]
	if !ok || !e.Replay {
		return Entry{}, false
	}
	return *e, true
}

// Unsent returns the finished commands whose answers have not been handed to a
// connection, oldest first.
func (j *Journal) Unsent() []Entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []Entry
	for _, id := range j.order {
		if e, ok := j.entries[id]; ok && !e.Sent {
			out = append(out, *e)
		}
	}
	return out
}

// ErrClosed is returned by Finish after Close.
var ErrClosed = errors.New("journal closed")

// Accepted records that a command has been accepted and will wait (a stagger, a
// delay, a slot) before it starts. The record rides with the next write, or goes on its
// own within lazyDelay: a command that starts at once takes it along with its start
// record. After a restart such a command is known to have never run (NotStarted).
func (j *Journal) Accepted(id string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return
	}
	j.accepted[id] = true
	j.queue(record{Op: opAccept, ID: id}, false)
}

// Started records that a command is about to go to its plugin and returns at once.
// The writer goes at once, and the channel receives the outcome of the write that
// carries the record (nil: it is on disk). The caller waits for it before the
// command runs: a command the agent is killed in is then always known after the
// restart and answered there (Interrupted), however slowly the disk or a loaded
// machine wrote the record.
func (j *Journal) Started(id string) <-chan error {
	w := make(chan error, 1)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		w <- ErrClosed
		return w
	}
	delete(j.accepted, id)
	j.started[id] = true
	j.queue(record{Op: opStart, ID: id}, true)
	j.waiters = append(j.waiters, w)
	return w
}

// Finish records a command's outcome and returns once it is on disk, so that an answer
// is never sent before the record that replays it exists.
func (j *Journal) Finish(e Entry) error {
	if e.ID == "" || len(e.ID) > MaxIDBytes {
		return fmt.Errorf("journal: command id of %d bytes", len(e.ID))
	}
	if len(e.Response) > MaxResponseBytes {
		return fmt.Errorf("journal: answer of %d bytes exceeds %d", len(e.Response), MaxResponseBytes)
	}
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return ErrClosed
	}
	if e.At.IsZero() {
		e.At = time.Now()
	}
	e.Sent = false
	delete(j.accepted, e.ID)
	delete(j.started, e.ID)
	j.remember(&e)
	j.queue(record{Op: opDone, ID: e.ID, At: e.At.UnixMilli(), Resp: e.Response, Replay: e.Replay}, true)
	w := make(chan error, 1)
	j.waiters = append(j.waiters, w)
	j.mu.Unlock()
	return <-w
}

// MarkSent records that a command's answer has been handed to a connection. It does
// not wait for the disk, and its record rides with the next flush or is written within
// lazyDelay: after a crash in that moment the answer is sent once more, which a fleet
// server takes as a repeat of the same terminal answer.
func (j *Journal) MarkSent(id string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return
	}
	if _, ok := j.entries[id]; !ok {
		return
	}
	j.markSent(id)
	j.queue(record{Op: opSent, ID: id}, false)
}

// queue adds a record for the writer; j.mu is held. A record that must not wait (now)
// has the writer flush at once, taking every pending record along; the others wait
// for that, or for the timer the first of them arms.
func (j *Journal) queue(r record, now bool) {
	j.pending = append(j.pending, r)
	if now {
		j.flushSoon()
		return
	}
	if j.timer == nil {
		gen := j.timerGen
		j.timer = time.AfterFunc(j.delay, func() { j.expire(gen) })
	}
}

// expire is the lazy timer's end: pending records have waited long enough.
func (j *Journal) expire(gen uint64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	// A flush that began after this timer was armed took its records along.
	if j.timer != nil && j.timerGen == gen {
		j.flushSoon()
	}
}

// flushSoon asks the writer to flush; j.mu is held.
func (j *Journal) flushSoon() {
	j.due = true
	select {
	case j.wake <- struct{}{}:
	default:
	}
}

// take hands the pending records and their waiters to the writer and disarms the lazy
// timer, whose records they include; j.mu is held.
func (j *Journal) take() ([]record, []chan error) {
	recs, waiters := j.pending, j.waiters
	j.pending, j.waiters, j.due = nil, nil, false
	if j.timer != nil {
		j.timer.Stop()
		j.timer = nil
		j.timerGen++
	}
	return recs, waiters
}

// writer flushes pending records when asked, one segment per flush. It alone touches
// the segment bookkeeping (nextSeq, segments, written), so the lock is held only to
// take the pending records and, for a compaction, to copy the state: lookups and new
// records never wait for the disk.
func (j *Journal) writer() {
	defer close(j.done)
	for range j.wake {
		j.mu.Lock()
		if !j.due && !j.closed {
			j.mu.Unlock()
			continue
		}
		recs, waiters := j.take()
		closed := j.closed
		j.mu.Unlock()
		if len(recs) > 0 {
			err := j.writeSegment(recs)
			j.lastErr = err
			// The waiters' records are on disk; a compaction only tidies up, so
			// they need not wait for it.
			for _, w := range waiters {
				w <- err
			}
			if err == nil && j.needCompaction() {
				j.lastErr = j.compact()
			}
		}
		if closed {
			return
		}
	}
}

// needCompaction says the segments hold far more records than the live state, or are
// more numerous than it warrants.
func (j *Journal) needCompaction() bool {
	j.mu.Lock()
	live := len(j.entries) + len(j.started) + len(j.accepted)
	j.mu.Unlock()
	return len(j.segments) > segmentLimit(live) || j.written > 4*live+MaxEntries/2
}

// segmentLimit is how many segments may pile up over a live state of live commands.
// A compaction rewrites the whole live state, so the limit grows with it: with a full
// journal one comes about every 2,600 sequential commands (each a segment) rather than
// every 128, and a concurrent load, which packs many records in a segment, reaches the
// record bound first. Open reads every segment, which is what keeps the limit finite.
func segmentLimit(live int) int { return maxSegments + live/4 }

func (j *Journal) writeSegment(recs []record) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
	}
	seq := j.nextSeq
	if err := atomicfile.WriteMode(filepath.Join(j.dir, segmentName(seq)), buf.Bytes(), 0o600); err != nil {
		var syncErr *atomicfile.DirSyncError
		if !errors.As(err, &syncErr) {
			return fmt.Errorf("journal: %w", err)
		}
	}
	j.nextSeq++
	j.segments = append(j.segments, seq)
	j.written += len(recs)
	return nil
}

// compact writes the live state as one segment and removes the older ones. Records
// queued after the copy go to later segments; replaying them over the copy gives the
// same state, because each record only sets where its command is.
func (j *Journal) compact() error {
	j.mu.Lock()
	j.order = slices.DeleteFunc(j.order, func(id string) bool { _, ok := j.entries[id]; return !ok })
	recs := make([]record, 0, len(j.order)+len(j.started)+len(j.accepted))
	for _, id := range j.order {
		e := j.entries[id]
		recs = append(recs, record{Op: opDone, ID: id, At: e.At.UnixMilli(), Resp: e.Response, Replay: e.Replay})
		if e.Sent {
			recs = append(recs, record{Op: opSent, ID: id})
		}
	}
	for id := range j.started {
		recs = append(recs, record{Op: opStart, ID: id})
	}
	for id := range j.accepted {
		recs = append(recs, record{Op: opAccept, ID: id})
	}
	j.mu.Unlock()
	j.compactions++
	old := j.segments
	j.segments = nil
	written := j.written
	j.written = 0
	if err := j.writeSegment(recs); err != nil {
		j.segments, j.written = old, written
		return err
	}
	var errs []error
	for _, seq := range old {
		if err := os.Remove(filepath.Join(j.dir, segmentName(seq))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("journal: removing compacted segments: %w", errors.Join(errs...))
	}
	return nil
}

// Close writes what is pending and stops the writer. Later calls record nothing.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	j.flushSoon()
	j.mu.Unlock()
	<-j.done
	return j.lastErr
}
