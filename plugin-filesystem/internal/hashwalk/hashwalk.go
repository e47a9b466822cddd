// Package hashwalk is the engine of find_by_hash: a bounded walk of a
// directory tree that hashes every regular file with SHA-256 and reports the
// files whose digest equals a target, together with a count of everything it
// skipped and why it stopped (docs/filesystem.md, find_by_hash).
//
// The walk never follows a symbolic link below its root, never opens
// anything but a directory or a regular file, refuses network mounts before
// touching them and stops at fixed bounds on time, entries, bytes and
// matches. Rows and Status turn its Result into the plugin's output.
package hashwalk

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/mounts"
)

// Bounds are the limits of one walk. The plugin always uses DefaultBounds;
// tests lower them so that each bound can be tripped cheaply.
type Bounds struct {
	// Deadline is the wall-clock budget of the whole walk.
	Deadline time.Duration
	// MaxVisited is the number of entries below the root the walk may meet.
	MaxVisited int64
	// MaxBytes is the total number of bytes the walk may hash.
	MaxBytes int64
	// MaxMatches is the number of matches reported before the walk stops.
	MaxMatches int
	// MaxFileSize is the largest file hashed; a larger one is skipped by
	// design and does not make the result incomplete.
	MaxFileSize int64
}

// DefaultBounds returns the fixed bounds of find_by_hash: 20 seconds,
// 50,000 entries visited, 4 GiB hashed, 100 matches and 10 GiB per file.
func DefaultBounds() Bounds {
	return Bounds{
		Deadline:    20 * time.Second,
		MaxVisited:  50_000,
		MaxBytes:    4 << 30,
		MaxMatches:  100,
		MaxFileSize: 10 << 30,
	}
}

func (b Bounds) validate() error {
	if b.Deadline <= 0 || b.MaxVisited <= 0 || b.MaxBytes <= 0 || b.MaxMatches <= 0 || b.MaxFileSize <= 0 {
		return fmt.Errorf("hashwalk: every bound must be positive: %+v", b)
	}
	return nil
}

// Request describes one walk.
type Request struct {
	// Root is the canonical, absolute directory to search.
	Root string
	// SHA256 is the target digest in hex, compared case-insensitively. A
	// value that is not 64 hex digits matches nothing; validating it is the
	// caller's business.
	SHA256 string
	// MaxDepth is the deepest level walked, already clamped to 1..10 by the
	// caller: entries of the root are at depth 1, and a directory at
	// MaxDepth is counted as visited but never opened.
	MaxDepth int
	// Mounts is the mount table, or nil when it could not be loaded; the
	// walk then runs without the guard and the result says so.
	Mounts *mounts.Table
	// Bounds are the limits; use DefaultBounds.
	Bounds Bounds
	// Workers is the number of parallel hashers; 0 means two per CPU.
	Workers int
	// Progress, when set, is called from the walker with the number of entries
	// visited so far, after each one (the action reports it as progress).
	Progress func(visited int64)
}

// Reason says why a walk ended early, or ReasonNone.
type Reason string

// The stop reasons, spelt as they appear in the truncated row.
const (
	ReasonNone       Reason = "none"
	ReasonDeadline   Reason = "deadline"
	ReasonFileCap    Reason = "file_cap"
	ReasonByteCap    Reason = "byte_cap"
	ReasonCancelled  Reason = "cancelled"
	ReasonMaxResults Reason = "max_results"
)

var reasonByCode = [...]Reason{ReasonNone, ReasonDeadline, ReasonFileCap, ReasonByteCap, ReasonCancelled, ReasonMaxResults}

func reasonCode(r Reason) int32 {
	for i, x := range reasonByCode {
		if x == r {
			return int32(i)
		}
	}
	return 0
}

// Match is one file whose digest equals the target.
type Match struct {
	// Path is the file's path below the canonical root.
	Path string
	// Size is the number of bytes hashed, i.e. the size of the content that
	// produced the digest.
	Size int64
}

// Counters are the figures of the truncated row.
type Counters struct {
	Visited             int64
	Hashed              int64
	SkippedUnreadable   int64
	SkippedSymlink      int64
	SkippedNotRegular   int64
	SkippedOversize     int64
	SkippedNetworkMount int64
}

// Result is the outcome of a walk.
type Result struct {
	// Matches are sorted by path and never more than Bounds.MaxMatches.
	Matches []Match
	// Reason is why the walk stopped early, or ReasonNone. ReasonByteCap is
	// also set, without stopping the walk, when a file larger than the
	// remaining byte budget was skipped; a later stop reason replaces it.
	Reason Reason
	Counters
	// GuardUnavailable is set when the walk ran without a mount table.
	GuardUnavailable bool
}

// Walk searches req.Root. It returns an error only for a malformed request;
// everything that happens to the tree, including a root that cannot be
// opened, is reported in the Result. Cancelling ctx stops the walk with
// ReasonCancelled.
func Walk(ctx context.Context, req Request) (Result, error) {
	if !filepath.IsAbs(req.Root) {
		return Result{}, fmt.Errorf("hashwalk: root %q is not absolute", req.Root)
	}
	if req.MaxDepth < 1 {
		return Result{}, fmt.Errorf("hashwalk: max depth %d is below 1", req.MaxDepth)
	}
	if err := req.Bounds.validate(); err != nil {
		return Result{}, err
	}
	root := filepath.Clean(req.Root)
	e := newEngine(req)
	if ctx.Err() != nil {
		e.trip(ReasonCancelled)
	}
	stopCtx := context.AfterFunc(ctx, func() { e.trip(ReasonCancelled) })
	timer := time.AfterFunc(req.Bounds.Deadline, func() { e.trip(ReasonDeadline) })
	defer timer.Stop()
	defer stopCtx()

	done := make(chan struct{})
	e.startWorkers()
	go func() {
		if !e.stopped() {
			e.walkRoot(root)
		}
		close(e.jobs)
		e.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-e.stopCh:
		// The walker and the hashers notice a stop between system calls,
		// but one stuck inside a call (a hung FUSE server, a dead disk)
		// cannot be interrupted. Give them a moment, then answer without
		// them; they clean up after themselves when the call returns.
		grace := time.NewTimer(stopGrace)
		select {
		case <-done:
		case <-grace.C:
		}
		grace.Stop()
	}
	// From here on a deadline or cancellation changes nothing and must not
	// be reported.
	e.finished.Store(true)
	return e.result(), nil
}

// stopGrace is how long Walk waits, after a bound tripped, for work that
// is stuck in a system call before it reports without it.
const stopGrace = time.Second

// engine holds the state shared by the walker goroutine and the hashers.
type engine struct {
	b        Bounds
	want     []byte
	maxDepth int
	table    *mounts.Table
	workers  int
	progress func(visited int64)

	jobs chan job
	wg   sync.WaitGroup

	// stopCode holds the first stop reason; stopCh is closed with it so a
	// walker blocked on a full queue wakes up.
	stopCode atomic.Int32
	stopOnce sync.Once
	stopCh   chan struct{}
	// byteCapNoted records a file skipped for the byte budget: the walk
	// goes on, but the reason becomes byte_cap unless it stops for another.
	byteCapNoted atomic.Bool
	// limitHit is set at the MaxMatches-th match; whoever then finds more
	// work left stops the walk with max_results.
	limitHit atomic.Bool
	// finished is set once every hasher has returned; later trips are
	// ignored.
	finished atomic.Bool

	// reserved is owned by the walker goroutine; visited is written only by
	// it but may be read while a stuck walker still runs.
	reserved int64
	visited  atomic.Int64

	hashed, unreadable, symlink, notRegular, oversize, network atomic.Int64

	mu      sync.Mutex
	matches []Match

	// walkerHasher is the walker goroutine's own state for the small
	// files it hashes itself (enqueue).
	walkerHasher hasher
}

// job is one opened regular file waiting for a hasher. Its size was judged
// on the open descriptor. The portable walk hands over a reader (r); the
// Linux walk hands over the raw descriptor (fd, r nil), which its hasher
// reads directly (hashfd_linux.go). A job names its file
// without allocating: the directory's path, shared by its entries, and a
// copy of the entry's name; a name too long for the array is kept in dir
// whole.
type job struct {
	r       io.ReadCloser
	fd      int
	size    int64
	dir     string
	nameLen int
	name    [nameMax]byte
}

// nameMax is the longest entry name a job holds inline (Linux's NAME_MAX).
const nameMax = 255

// path is the file's path below the canonical root.
func (j *job) path() string {
	if j.nameLen == 0 {
		return j.dir
	}
	return joinPath(j.dir, string(j.name[:j.nameLen]))
}

func newEngine(req Request) *engine {
	w := req.Workers
	if w <= 0 {
		// Two hashers per CPU: while one waits in read(2) for the page cache copy,
		// the other hashes, which keeps every core on SHA-256 (measured: 77% of the
		// machine's limit on two cores, against 70% with one per CPU).
		w = 2 * runtime.GOMAXPROCS(0)
	}
	w = min(w, 32)
	e := &engine{
		b:        req.Bounds,
		maxDepth: req.MaxDepth,
		table:    req.Mounts,
		workers:  w,
		progress: req.Progress,
		jobs:     make(chan job, 4*w),
		stopCh:   make(chan struct{}),
	}
	e.walkerHasher = newHasher()
	if d, err := hex.DecodeString(req.SHA256); err == nil && len(d) == sha256.Size {
		e.want = d
	}
	return e
}

func (e *engine) trip(r Reason) {
	if e.finished.Load() {
		return
	}
	if e.stopCode.CompareAndSwap(0, reasonCode(r)) {
		e.stopOnce.Do(func() { close(e.stopCh) })
	}
}

func (e *engine) stopped() bool { return e.stopCode.Load() != 0 }

// nextEntry is asked by the walker before it looks at each entry. It
// enforces the entry bound and the match bound (a match limit reached while
// entries remain), counts the entry and says whether the walk goes on.
func (e *engine) nextEntry() bool {
	if e.stopped() {
		return false
	}
	if e.limitHit.Load() {
		e.trip(ReasonMaxResults)
		return false
	}
	if e.visited.Load() >= e.b.MaxVisited {
		e.trip(ReasonFileCap)
		return false
	}
	n := e.visited.Add(1)
	if e.progress != nil {
		e.progress(n)
	}
	return true
}

// admitFile decides, on the size read from the open descriptor, whether a
// regular file is hashed. It reserves the file's size from the byte budget
// so that parallel hashers never admit more than the budget between them.
func (e *engine) admitFile(size int64) bool {
	if size > e.b.MaxFileSize {
		e.oversize.Add(1)
		return false
	}
	if size > e.b.MaxBytes-e.reserved {
		e.oversize.Add(1)
		e.byteCapNoted.Store(true)
		return false
	}
	e.reserved += size
	return true
}

// enqueue hands an opened file to the hashers, or closes it when the walk
// has stopped meanwhile. When every hasher is busy and the queue is full, a
// small file is hashed by the walker itself where it was opened: that keeps
// the walker's core hashing instead of parking it until a hasher frees a
// slot, and costs no hand-off.
func (e *engine) enqueue(j *job) bool {
	select {
	case e.jobs <- *j:
		return true
	default:
	}
	if j.size <= inlineMax {
		e.hashJob(j, &e.walkerHasher)
		return !e.stopped()
	}
	select {
	case e.jobs <- *j:
		return true
	case <-e.stopCh:
		j.close()
		return false
	}
}

// inlineMax is the largest file the walker hashes itself when the hashers
// are all busy: small enough that the walk is never held up for long.
const inlineMax = 1 << 20

func (j *job) close() {
	if j.r != nil {
		j.r.Close()
		return
	}
	closeFD(j.fd)
}

// hasher is one goroutine's hashing state, allocated once per walk.
type hasher struct {
	buf []byte
	h   hash.Hash
	sum []byte
}

func newHasher() hasher {
	return hasher{buf: make([]byte, readBufSize), h: sha256.New(), sum: make([]byte, 0, sha256.Size)}
}

func (e *engine) startWorkers() {
	for range e.workers {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			hs := newHasher()
			for j := range e.jobs {
				e.hashJob(&j, &hs)
			}
		}()
	}
}

// hashJob hashes one file and closes it.
func (e *engine) hashJob(j *job, hs *hasher) {
	if j.r == nil {
		e.hashFD(j, hs)
		return
	}
	e.hashFile(j, hs.buf, hs.h, hs.sum)
	j.r.Close()
}

// consume admits up to n freshly read bytes against the byte budget and
// returns how many fit.
func (e *engine) consume(n int64) int64 {
	for {
		cur := e.hashed.Load()
		take := min(n, e.b.MaxBytes-cur)
		if take <= 0 {
			return 0
		}
		if e.hashed.CompareAndSwap(cur, cur+take) {
			return take
		}
	}
}

// ready says whether the next chunk of a file may be hashed: not when the
// walk stopped, nor once the match bound is reached (this file would have
// been examined after the last reported match, so entries remain).
func (e *engine) ready() bool {
	if e.stopped() {
		return false
	}
	if e.limitHit.Load() {
		e.trip(ReasonMaxResults)
		return false
	}
	return true
}

// feed admits one chunk against the byte budget and hashes it, adding its
// length to *n. It returns false when the file must be abandoned: the
// budget ran out (reason byte_cap) or the file grew past the per-file cap.
func (e *engine) feed(h hash.Hash, chunk []byte, n *int64) bool {
	take := e.consume(int64(len(chunk)))
	h.Write(chunk[:take])
	*n += take
	if take < int64(len(chunk)) {
		e.trip(ReasonByteCap)
		return false
	}
	if *n > e.b.MaxFileSize {
		// It grew past the per-file cap while being read.
		e.oversize.Add(1)
		return false
	}
	return true
}

// hashFile hashes a file through its reader (the portable walk's jobs).
func (e *engine) hashFile(j *job, buf []byte, h hash.Hash, sum []byte) {
	hashStream(e, j, j.r, buf, h, sum)
}

// hashStream hashes a file by reading it. It stops at the size judged on the
// descriptor, with no read to meet end-of-file, unless the digest matches:
// then one more read makes sure the file did not grow, and a grown file is
// read on to its end, so a match is never reported for a prefix. A size of
// zero or below is read to the end: some FUSE and kernel files report no
// size for content they hold. It is generic so that the Linux hasher's raw
// descriptor is read without being boxed in an interface.
func hashStream[R io.Reader](e *engine, j *job, r R, buf []byte, h hash.Hash, sum []byte) {
	h.Reset()
	var n int64
	known := j.size > 0
	for {
		if known && n >= j.size {
			if !e.isTarget(h, sum) {
				return
			}
			// Confirm the end before reporting; from here on the size
			// is whatever the file holds.
			known = false
		}
		if !e.ready() {
			return
		}
		want := buf
		if known {
			want = buf[:min(int64(len(buf)), j.size-n)]
		}
		k, err := r.Read(want)
		if k > 0 && !e.feed(h, want[:k], &n) {
			return
		}
		if errors.Is(err, io.EOF) || (err == nil && k == 0) {
			break
		}
		if err != nil {
			e.unreadable.Add(1)
			return
		}
	}
	if e.isTarget(h, sum) {
		e.addMatch(j.path(), n)
	}
}

// isTarget reports whether the digest so far equals the target; h keeps its
// state.
func (e *engine) isTarget(h hash.Hash, sum []byte) bool {
	return e.want != nil && bytes.Equal(h.Sum(sum[:0]), e.want)
}

func (e *engine) addMatch(path string, size int64) {
	e.mu.Lock()
	e.matches = append(e.matches, Match{Path: path, Size: size})
	found := len(e.matches)
	e.mu.Unlock()
	switch {
	case found > e.b.MaxMatches:
		e.trip(ReasonMaxResults)
	case found == e.b.MaxMatches:
		e.limitHit.Store(true)
	}
}

func (e *engine) result() Result {
	r := Result{
		Reason: ReasonNone,
		Counters: Counters{
			Visited:             e.visited.Load(),
			Hashed:              e.hashed.Load(),
			SkippedUnreadable:   e.unreadable.Load(),
			SkippedSymlink:      e.symlink.Load(),
			SkippedNotRegular:   e.notRegular.Load(),
			SkippedOversize:     e.oversize.Load(),
			SkippedNetworkMount: e.network.Load(),
		},
		GuardUnavailable: e.table == nil,
	}
	if c := e.stopCode.Load(); c != 0 {
		r.Reason = reasonByCode[c]
	} else if e.byteCapNoted.Load() {
		r.Reason = ReasonByteCap
	}
	e.mu.Lock()
	ms := append([]Match(nil), e.matches...)
	e.mu.Unlock()
	sort.Slice(ms, func(a, b int) bool { return ms[a].Path < ms[b].Path })
	if len(ms) > e.b.MaxMatches {
		ms = ms[:e.b.MaxMatches]
	}
	r.Matches = ms
	return r
}

// walkRoot walks root unless the mount table already says it is on a network or
// pseudo filesystem, which the walk never enters (the per-OS walk checks every mount
// it crosses below the root).
func (e *engine) walkRoot(root string) {
	switch e.table.Classify(root) {
	case mounts.Network:
		e.network.Add(1)
	case mounts.Pseudo:
		e.unreadable.Add(1)
	default:
		e.walk(root)
	}
}

// joinPath appends one name to a directory path without cleaning, since
// both parts are already canonical.
func joinPath(dir, name string) string {
	if len(dir) > 0 && (dir[len(dir)-1] == '/' || dir[len(dir)-1] == filepath.Separator) {
		return dir + name
	}
	return dir + string(filepath.Separator) + name
}
