// Package journal keeps the agent's durable record of fleet commands: which ones have
// started, the terminal answer of each finished one (so a repeated command id is
// answered from the record instead of running twice, also after a restart), and which
// answers have not reached the fleet server yet (so none is lost when a connection
// drops or the agent stops).
//
// The record lives in its own directory (mode 0700) as numbered segment files (mode
// 0600). Each flush writes the records gathered since the previous one as a batch (a
// header line, then the records) and waits for one fsync; every record queued while
// that fsync is in flight goes in the next batch, so many callers waiting at once
// share one write and one fsync (group commit). A segment's first batch is written
// through sdk/atomicfile (temp file, fsync, rename, directory fsync), so a segment
// always holds at least one whole batch; the next flushes are appended to it and
// fsynced (one fsync each, no new name) until it holds batchesPerSegment batches or
// segmentBytes, or a compaction starts the next. A flush whose write or fsync fails
// is cut off again before its error is returned.
//
// Torn tail. Appends are the only writes that can be cut short by a crash, and only
// the last one: a batch is written after the previous one's fsync. So a newest
// segment whose whole batches are followed by part of one (fewer records than its
// header says, a line failing its check, a half line) lost a flush nobody was told
// had been written, and that part is dropped quietly at Open (and cut off the file).
// Anything else cut short or failing a check is damage, below.
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
//
// Damage. Each line of a segment carries a CRC-32C of its bytes, and each segment
// starts with a header naming every command id in it and how many records follow.
// A segment is damaged when a line fails its check or does not parse, when it holds
// fewer good records than its header says (cut short), or when it cannot be read at
// all (not a regular file, over its size bound); a gap in the segment numbers is a
// segment removed. The good records are applied; then every command the header or a
// damaged line still names, and every command in flight (accepted or started) at
// that point, unless a good record shows it settled, becomes "seen, outcome
// unknown" (an Entry with Unknown set, kept like a finished command and through
// compactions). A repeat of such an id is answered as unknown and never run again: a
// damaged journal must not make a finished command run twice, nor call one that may
// have run "interrupted" or "never started". A damaged file is renamed aside as
// damaged-seg-....jsonl for inspection and named in Warnings at every Open until it
// is removed. Lines without a check (segments written before checks existed) still
// load. What cannot be known is said in Warnings: a command named only by a segment
// that is gone or unreadable.
package journal

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
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
	// batchesPerSegment and segmentBytes bound how many flushes are appended to one
	// segment, and its size, before the next flush starts a new one.
	batchesPerSegment = 4096
	segmentBytes      = 8 << 20
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
	// Unknown says the command's records were damaged: it was seen, its outcome is
	// not known, and a repeat is answered as such rather than run (Response is
	// empty). See "Damage" in the package doc.
	Unknown bool
}

// record is one line of a segment.
type record struct {
	Op     string `json:"op"` // "accept", "start", "done", "sent" or "unknown"
	ID     string `json:"id"`
	At     int64  `json:"at,omitempty"` // Unix milliseconds
	Resp   []byte `json:"resp,omitempty"`
	Replay bool   `json:"replay,omitempty"`
}

// header is the first line of a segment: every id its records name and how many
// records follow, so that a damaged or truncated segment still says which commands it
// held (see "Damage" in the package doc).
type header struct {
	Op      string   `json:"op"` // "ids"
	IDs     []string `json:"ids"`
	Records int      `json:"records"`
	// Compacted marks a segment that holds the whole live state (compact): the
	// segments before the previous such one are no longer needed.
	Compacted bool `json:"compacted,omitempty"`
}

const (
	opAccept  = "accept"
	opStart   = "start"
	opDone    = "done"
	opSent    = "sent"
	opUnknown = "unknown"
	opHeader  = "ids"
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
	// forceCompact says Open must compact: a damaged segment was put aside, a torn
	// tail could not be cut off, or the only segment is not a compacted one.
	forceCompact bool
	// others are the caller's names in the directory (Open).
	others []string

	// Owned by the writer goroutine (and by Open before it starts); read by tests
	// after the writer has stopped.
	nextSeq  uint64
	segments []uint64 // sequence numbers on disk, ascending
	// base is the newest segment that holds the whole live state (0: none known).
	// A compaction keeps the segments from base on, the generation before it: should
	// the new compacted segment be lost (truncated, emptied), they still hold
	// everything it held.
	base        uint64
	written     int   // records on disk
	compactions int   // compactions since Open, the one in Open included
	lastErr     error // of the last flush; read by Close after done is closed
	// mustCompact says a failed append could not be cut off: the next flush compacts.
	mustCompact bool
	// active is the newest segment, open for appending the next flushes (nil: the
	// next flush starts a new segment); activeSize is its length and activeBatches
	// how many flushes it holds. perFile bounds the flushes a segment takes
	// (batchesPerSegment; 1 in tests that need one flush a segment).
	active        *os.File
	activeSize    int64
	activeBatches int
	perFile       int
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
// stopped are reported by Interrupted. Damage is reported by Warnings, and the
// commands it may have hidden are kept as unknown (see the package doc); a directory
// that is not private to the agent is an error.
//
// others are names the caller keeps in dir beside the journal (the answer spool): they
// are not the journal's, and not warned about as unexpected.
func Open(dir string, others ...string) (*Journal, error) {
	return openWith(dir, lazyDelay, batchesPerSegment, others...)
}

// openWith is Open with the time delivery records may wait for a flush and the
// batches a segment takes.
func openWith(dir string, delay time.Duration, perFile int, others ...string) (*Journal, error) {
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
		others:   others,
		perFile:  perFile,
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
	// The state goes back to one compacted segment at every Open but one that finds
	// just that.
	if len(j.segments) > 1 || j.forceCompact {
		if err := j.compact(); err != nil {
			return nil, err
		}
	}
	go j.writer()
	return j, nil
}

// damagedPrefix names a damaged segment kept aside for inspection.
const damagedPrefix = "damaged-"

// load reads every segment in order and removes temp files that an interrupted write
// left behind. A damaged segment is renamed aside (damagedPrefix) once read, and the
// state is compacted, so that the unknown outcomes it left are recorded whole.
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
		if rest, ok := strings.CutPrefix(name, damagedPrefix); ok {
			if _, isSeg := parseSegmentName(rest); isSeg {
				j.warnings = append(j.warnings, fmt.Sprintf("a damaged segment is kept for inspection at %s; remove it once looked at", filepath.Join(j.dir, name)))
				continue
			}
		}
		if slices.Contains(j.others, name) {
			continue
		}
		j.warnings = append(j.warnings, fmt.Sprintf("ignored unexpected entry %s", filepath.Join(j.dir, name)))
	}
	slices.Sort(j.segments)
	if len(j.segments) > 0 {
		j.nextSeq = j.segments[len(j.segments)-1] + 1
	}
	// Read every segment once; replay from the newest whole compacted one (the live
	// state as it was written then), or from the first when there is none. The
	// generation before it is read only when the newest compacted segment is damaged:
	// its content is that generation's, replayed.
	type segment struct {
		seq  uint64
		data []byte
		err  error
	}
	segs := make([]segment, len(j.segments))
	start := 0
	for i, seq := range j.segments {
		segs[i] = segment{seq: seq}
		segs[i].data, segs[i].err = safefile.ReadFile(filepath.Join(j.dir, segmentName(seq)), maxSegmentBytes)
		if segs[i].err == nil && wholeCompacted(segs[i].data) {
			start = i
		}
	}
	var damaged []uint64
	for i := start; i < len(segs); i++ {
		seq := segs[i].seq
		path := filepath.Join(j.dir, segmentName(seq))
		// Segments since the last compaction are numbered without gaps, and a
		// compaction removes the older ones oldest first: a gap is a segment that was
		// removed by hand, which may have held the outcome of any command in flight.
		if i > start && seq != segs[i-1].seq+1 {
			n := j.unknown(nil)
			j.warnings = append(j.warnings, fmt.Sprintf("segments %s to %s are missing: %d commands in flight before them are kept as seen with an unknown outcome and will not run again; others they held cannot be known",
				segmentName(segs[i-1].seq+1), segmentName(seq-1), n))
		}
		if err := segs[i].err; err != nil {
			damaged = append(damaged, seq)
			n := j.unknown(nil)
			j.warnings = append(j.warnings, fmt.Sprintf("unreadable segment: %v; %d commands in flight before it are kept as seen with an unknown outcome and will not run again; others it held cannot be known", err, n))
			continue
		}
		if i == len(segs)-1 {
			if keep, torn := tornTail(segs[i].data); torn {
				// A flush cut short by a crash: nobody was told it was written.
				segs[i].data = segs[i].data[:keep]
				if err := cutTail(path, int64(keep)); err != nil {
					j.forceCompact = true
				}
			}
		}
		n, named, problem, compacted := j.applySegment(segs[i].data)
		if compacted {
			j.base = seq
		} else if end, ok := batchEnd(segs[i].data, 0); len(segs) == 1 && ok && end < len(segs[i].data) {
			// One segment of several flushes: Open writes the state as one
			// compacted segment, as it does over several segments.
			j.forceCompact = true
		}
		j.written += n
		if problem != "" {
			damaged = append(damaged, seq)
			unknown := j.unknown(named)
			j.warnings = append(j.warnings, fmt.Sprintf("segment %s damaged (%s): %d good records; %d commands are kept as seen with an unknown outcome and will not run again",
				path, problem, n, unknown))
		}
	}
	// The segments before the one replay started from are a generation that is no
	// longer needed; the next compaction removes them.
	if len(damaged) == 0 {
		return nil
	}
	for _, seq := range damaged {
		name := segmentName(seq)
		if err := os.Rename(filepath.Join(j.dir, name), filepath.Join(j.dir, damagedPrefix+name)); err != nil {
			j.warnings = append(j.warnings, fmt.Sprintf("keeping the damaged segment aside: %v", err))
		}
	}
	j.segments = slices.DeleteFunc(j.segments, func(seq uint64) bool { return slices.Contains(damaged, seq) })
	j.forceCompact = true
	return nil
}

// tornTail reports whether a segment ends in a torn append: one or more whole batches,
// then part of one (see "Torn tail" in the package doc), and if so the length of the
// whole ones. A segment whose first batch is not whole, or with a batch header after
// the part, is not torn but damaged.
func tornTail(data []byte) (keep int, torn bool) {
	off, batches := 0, 0
	for off < len(data) {
		end, ok := batchEnd(data, off)
		if !ok {
			break
		}
		off, batches = end, batches+1
	}
	if off == len(data) || batches == 0 {
		return len(data), false
	}
	rest := data[off:]
	if i := bytes.IndexByte(rest, '\n'); i >= 0 {
		for line := range bytes.SplitSeq(rest[i+1:], []byte("\n")) {
			if _, ok := headerLine(line); ok {
				return len(data), false
			}
		}
	}
	return off, true
}

// batchEnd returns the offset just past the whole batch that starts at off: a header
// line and as many records as it announces, every line with a good check.
func batchEnd(data []byte, off int) (int, bool) {
	line, next, ok := nextLine(data, off)
	if !ok {
		return 0, false
	}
	h, ok := headerLine(line)
	if !ok {
		return 0, false
	}
	for range h.Records {
		if line, next, ok = nextLine(data, next); !ok {
			return 0, false
		}
		if _, good, sum := splitCheck(line); !good || !sum {
			return 0, false
		}
	}
	return next, true
}

// nextLine returns the whole line (newline ended) at off and the offset after it.
func nextLine(data []byte, off int) (line []byte, next int, ok bool) {
	i := bytes.IndexByte(data[off:], '\n')
	if i < 0 {
		return nil, 0, false
	}
	return data[off : off+i], off + i + 1, true
}

// headerLine parses a batch header line with a good check.
func headerLine(line []byte) (header, bool) {
	body, good, sum := splitCheck(line)
	if !good || !sum || !bytes.HasPrefix(body, []byte(`{"op":"ids"`)) {
		return header{}, false
	}
	var h header
	if err := json.Unmarshal(body, &h); err != nil || h.Op != opHeader {
		return header{}, false
	}
	return h, true
}

// cutTail cuts a torn append off the file at path.
func cutTail(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return err
	}
	return atomicfile.SyncFile(f)
}

// wholeCompacted reports whether a segment's data is a whole compacted segment: its
// header says compacted and every record it announces is there with its check. It
// changes no state.
func wholeCompacted(data []byte) bool {
	scratch := &Journal{entries: map[string]*Entry{}, accepted: map[string]bool{}, started: map[string]bool{}}
	_, _, problem, compacted := scratch.applySegment(data)
	return compacted && problem == ""
}

// applySegment replays the records of one segment onto the state and returns how many
// good records it held, and whether its header marks it compacted. When the segment is
// damaged, problem says how, and named holds the ids its header and damaged lines still
// name.
func (j *Journal) applySegment(data []byte) (n int, named []string, problem string, compacted bool) {
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		// Every segment is written whole with its header: one without a line was
		// emptied (truncated to nothing), and what it held is lost.
		return 0, nil, "empty: a segment always holds at least its header", false
	}
	wantRecords := -1
	batch := 0       // good records of the current batch
	checked := false // the segment's lines carry checks: every line must
	damage := func(what string, line int) {
		if problem == "" {
			problem = fmt.Sprintf("line %d: %s", line, what)
		}
	}
	for i, line := range lines {
		body, ok, sum := splitCheck(line)
		if i == 0 && sum {
			checked = true
		}
		if sum && !ok {
			damage("check failed", i+1)
			named = append(named, salvageIDs(body)...)
			continue
		}
		if !sum && checked {
			damage("no check", i+1)
			named = append(named, salvageIDs(body)...)
			continue
		}
		if checked && bytes.HasPrefix(body, []byte(`{"op":"ids"`)) {
			// A batch's header: the segment's first line, or the start of an
			// appended batch.
			var h header
			if err := json.Unmarshal(body, &h); err == nil && h.Op == opHeader {
				if wantRecords >= 0 && batch < wantRecords {
					damage(fmt.Sprintf("%d of the %d records before it are missing", wantRecords-batch, wantRecords), i+1)
				}
				named = append(named, h.IDs...)
				wantRecords, batch = h.Records, 0
				if i == 0 {
					compacted = h.Compacted
				}
				continue
			}
		}
		var r record
		if err := json.Unmarshal(body, &r); err != nil {
			damage(err.Error(), i+1)
			named = append(named, salvageIDs(body)...)
			continue
		}
		if r.ID == "" || len(r.ID) > MaxIDBytes || len(r.Resp) > MaxResponseBytes {
			damage("record out of bounds", i+1)
			named = append(named, salvageIDs(body)...)
			continue
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
		case opUnknown:
			j.forget(r.ID, time.UnixMilli(r.At))
		default:
			damage(fmt.Sprintf("unknown op %q", r.Op), i+1)
			named = append(named, r.ID)
			continue
		}
		n++
		batch++
	}
	if checked && wantRecords < 0 && problem == "" {
		damage("no header", 1)
	}
	if wantRecords >= 0 && batch < wantRecords && problem == "" {
		problem = fmt.Sprintf("%d of its %d records are missing (truncated?)", wantRecords-batch, wantRecords)
	}
	if problem == "" {
		return n, nil, "", compacted
	}
	return n, named, problem, false
}

// unknown marks as seen with an unknown outcome the commands a damaged or missing
// segment may have held the outcome of: those named, and every command in flight
// (accepted or started) when it was written, since the lost records could have
// started or finished it. A command a good record shows settled keeps its answer: a
// lost record could only have marked it delivered. It returns how many it marked.
func (j *Journal) unknown(named []string) int {
	for id := range j.accepted {
		named = append(named, id)
	}
	for id := range j.started {
		named = append(named, id)
	}
	slices.Sort(named)
	marked := 0
	for _, id := range slices.Compact(named) {
		if id == "" || len(id) > MaxIDBytes {
			continue
		}
		// An answer that does not settle its command (Replay unset) says nothing of
		// a later run of the same id, which the lost records may have held.
		if e, ok := j.entries[id]; ok && (e.Replay || e.Unknown) {
			continue
		}
		j.forget(id, time.Now())
		marked++
	}
	return marked
}

// forget records that a command was seen but its outcome is unknown.
func (j *Journal) forget(id string, at time.Time) {
	delete(j.accepted, id)
	delete(j.started, id)
	j.remember(&Entry{ID: id, Replay: true, Sent: true, Unknown: true, At: at})
}

// checkLen is the length of a line's check: 8 hex digits and a space.
const checkLen = 9

// checkTable is CRC-32C's (Castagnoli).
var checkTable = crc32.MakeTable(crc32.Castagnoli)

// withCheck returns body as a segment line: its CRC-32C in hex, a space, body, a newline.
func withCheck(body []byte) []byte {
	out := make([]byte, 0, checkLen+len(body)+1)
	out = hex.AppendEncode(out, binary.BigEndian.AppendUint32(nil, crc32.Checksum(body, checkTable)))
	out = append(out, ' ')
	out = append(out, body...)
	return append(out, '\n')
}

// splitCheck parses one segment line: sum says it carries a check (new segments), ok
// that the check matches. A line without one (old segments) comes back whole.
func splitCheck(line []byte) (body []byte, ok, sum bool) {
	if len(line) > 0 && line[0] == '{' {
		return line, false, false
	}
	if len(line) < checkLen || line[checkLen-1] != ' ' {
		return line, false, true
	}
	want, err := hex.DecodeString(string(line[:checkLen-1]))
	body = line[checkLen:]
	if err != nil || len(want) != 4 {
		return body, false, true
	}
	got := crc32.Checksum(body, checkTable)
	return body, binary.BigEndian.Uint32(want) == got, true
}

// idField finds the id fields of a damaged line: its JSON may not parse any more.
var idField = regexp.MustCompile(`"id":("(?:[^"\\]|\\.)*")`)

// salvageIDs returns the command ids a damaged line may still name: the "id" of a
// record, or the "ids" of a header, whatever of them can still be read.
func salvageIDs(body []byte) []string {
	var out []string
	var h struct {
		IDs []string `json:"ids"`
	}
	if json.Unmarshal(body, &h) == nil {
		out = append(out, h.IDs...)
	}
	for _, m := range idField.FindAllSubmatch(body, -1) {
		if id, err := strconv.Unquote(string(m[1])); err == nil {
			out = append(out, id)
		}
	}
	return out
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

// Lookup returns the outcome of a finished command whose answer is to be replayed,
// or of one whose outcome damage made unknown (Unknown set, Response empty): neither
// is to run again.
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
			if err == nil && (j.mustCompact || j.needCompaction()) {
				j.lastErr = j.compact()
				j.mustCompact = j.mustCompact && j.lastErr != nil
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
	return j.current() > segmentLimit(live) || j.written > 4*live+MaxEntries/2
}

// current is how many segments replay reads: those from the newest compacted one on
// (the generation kept before it is only read should that one be lost).
func (j *Journal) current() int {
	n := 0
	for _, seq := range j.segments {
		if seq >= j.base {
			n++
		}
	}
	return n
}

// segmentLimit is how many segments may pile up over a live state of live commands.
// A compaction rewrites the whole live state, so the limit grows with it: with a full
// journal one comes about every 2,600 sequential commands (each a segment) rather than
// every 128, and a concurrent load, which packs many records in a segment, reaches the
// record bound first. Open reads every segment, which is what keeps the limit finite.
func segmentLimit(live int) int { return maxSegments + live/4 }

// writeSegment writes recs as the next batch: appended to the active segment while it
// has room, else as the first batch of a new one.
func (j *Journal) writeSegment(recs []record) error {
	data, err := encode(recs, false)
	if err != nil {
		return err
	}
	if j.active != nil && j.activeBatches < j.perFile && j.activeSize+int64(len(data)) <= segmentBytes {
		if err := j.appendActive(data); err != nil {
			return err
		}
		j.written += len(recs)
		return nil
	}
	seq, err := j.create(data)
	if err != nil {
		return err
	}
	j.written += len(recs)
	// The directory is trusted (Open): nobody else can have put a link there. A
	// segment that cannot be opened for appending only means the next flush starts
	// another.
	if f, err := os.OpenFile(filepath.Join(j.dir, segmentName(seq)), os.O_WRONLY|os.O_APPEND, 0); err == nil {
		j.active, j.activeSize, j.activeBatches = f, int64(len(data)), 1
	}
	return nil
}

// appendActive appends one batch to the active segment and fsyncs it. On failure it
// cuts the segment back to its last whole batch and closes it, so that the next flush
// starts a new segment after a clean one; should the cut fail too, what was written
// is a torn tail for Open, which drops it quietly, and the next flush compacts so
// that no later segment follows it in what replay reads.
func (j *Journal) appendActive(data []byte) error {
	_, err := j.active.Write(data)
	if err == nil {
		err = atomicfile.SyncFile(j.active)
	}
	if err == nil {
		j.activeSize += int64(len(data))
		j.activeBatches++
		return nil
	}
	if terr := j.active.Truncate(j.activeSize); terr != nil || atomicfile.SyncFile(j.active) != nil {
		j.mustCompact = true
	}
	j.closeActive()
	return fmt.Errorf("journal: %w", err)
}

// closeActive closes the active segment: the next flush starts a new one.
func (j *Journal) closeActive() {
	if j.active != nil {
		_ = j.active.Close()
		j.active, j.activeSize, j.activeBatches = nil, 0, 0
	}
}

// encode returns recs as one batch: the header line, then a line a record.
func encode(recs []record, compacted bool) ([]byte, error) {
	h := header{Op: opHeader, Records: len(recs), Compacted: compacted}
	seen := make(map[string]bool, len(recs))
	for _, r := range recs {
		if !seen[r.ID] {
			seen[r.ID] = true
			h.IDs = append(h.IDs, r.ID)
		}
	}
	var buf bytes.Buffer
	line, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	buf.Write(withCheck(line))
	for _, r := range recs {
		line, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("journal: %w", err)
		}
		buf.Write(withCheck(line))
	}
	return buf.Bytes(), nil
}

// create writes data as the whole content of a new segment, atomically, and returns
// its sequence number.
func (j *Journal) create(data []byte) (uint64, error) {
	j.closeActive()
	seq := j.nextSeq
	if err := atomicfile.WriteMode(filepath.Join(j.dir, segmentName(seq)), data, 0o600); err != nil {
		var syncErr *atomicfile.DirSyncError
		if !errors.As(err, &syncErr) {
			return 0, fmt.Errorf("journal: %w", err)
		}
	}
	j.nextSeq++
	j.segments = append(j.segments, seq)
	return seq, nil
}

// write writes recs as a new segment of their own; compacted marks it as holding the
// whole live state. Nothing is appended to it.
func (j *Journal) write(recs []record, compacted bool) error {
	data, err := encode(recs, compacted)
	if err != nil {
		return err
	}
	if _, err := j.create(data); err != nil {
		return err
	}
	j.written += len(recs)
	return nil
}

// compact writes the live state as one segment and removes the segments before the
// previous compacted one: the generation between that one and the new one stays, so
// that losing the new segment (emptied, truncated by something outside the agent)
// loses nothing, its content being theirs replayed. Records queued after the copy go
// to later segments; replaying them over the copy gives the same state, because each
// record only sets where its command is.
func (j *Journal) compact() error {
	j.mu.Lock()
	j.order = slices.DeleteFunc(j.order, func(id string) bool { _, ok := j.entries[id]; return !ok })
	recs := make([]record, 0, len(j.order)+len(j.started)+len(j.accepted))
	for _, id := range j.order {
		e := j.entries[id]
		if e.Unknown {
			recs = append(recs, record{Op: opUnknown, ID: id, At: e.At.UnixMilli()})
			continue
		}
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
	written := j.written
	j.written = 0
	if err := j.write(recs, true); err != nil {
		j.segments, j.written = old, written
		return err
	}
	// Keep the generation from the previous compacted segment on; with none known (a
	// first compaction, or a journal of an older agent), keep them all this once.
	var errs []error
	keep := j.segments[:0:0]
	for _, seq := range j.segments {
		if j.base == 0 || seq >= j.base {
			keep = append(keep, seq)
			continue
		}
		if err := os.Remove(filepath.Join(j.dir, segmentName(seq))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	j.segments = keep
	j.base = j.nextSeq - 1
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
	j.closeActive()
	return j.lastErr
}
