// Package store keeps the tags plugin's key/value map and its file, <data dir>/tags.json.
//
// The map lives in memory and every mutation rewrites the whole file atomically
// (sdk/atomicfile), as upstream does. On top of upstream (see docs/tags.md):
//
//   - a corrupt tags.json (not JSON, not an object, a value that is not a string) is
//     never overwritten: it is renamed to tags.json.corrupt-<UTC time>, the store
//     starts empty and answers carry LoadFailed from the call that found it until the
//     first successful write by a later call;
//   - a tags.json that exists but cannot be read, or is not a regular file of our own
//     (a symbolic link, a FIFO, a socket, a directory, a file of another owner or with
//     other hard links) is never overwritten or followed either: every call returns an
//     *UnreadableError, and the next call tries again;
//   - a mutation that would make tags.json larger than the store reads back is refused
//     with a *FullError and changes nothing;
//   - several processes may share the data dir: a mutation holds an exclusive advisory
//     lock on tags.json.lock, re-reads tags.json if its content changed, applies the
//     change and rewrites the file, so no update is lost; a read re-reads the file
//     when an lstat shows it changed;
//   - files and directories the store creates are private to its user: tags.json and
//     the lock file 0600, a data dir 0700, whatever the umask; temp files a crashed
//     write left behind are removed when the store is opened.
//
// A path that cannot hold the file (a parent is a regular file, the data dir cannot be
// searched or written) is not an error when reading: the store is simply empty, and
// the next mutation reports the failed write in State.PersistErr.
package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/safefile"
)

// FileName is the store file's name inside the data dir.
const FileName = "tags.json"

// LockSuffix is appended to the store file's path to name the lock file. The lock file
// is created on the first mutation and left in place: removing it would let two
// processes lock two different files.
const LockSuffix = ".lock"

// CorruptInfix is appended to the store file's path, followed by the UTC time as
// 20060102T150405Z, to name a corrupt file moved aside.
const CorruptInfix = ".corrupt-"

// MaxFileBytes bounds the tags.json this store will read, and so the one it will
// write. Upstream caps a value at 448 bytes and a key at 64; a file this large is not
// one a normal tag set produces, and reading it whole could exhaust memory, so a larger
// file is reported unreadable (and left alone) and a change that would produce one is
// refused.
const MaxFileBytes = 16 << 20

// Modes of what the store creates. Tags steer fleet targeting and the agent usually
// runs as root, so nobody else may read or change them, whatever the umask.
const (
	fileMode = 0o600
	dirMode  = 0o700
)

// maxPending bounds the warnings kept for a logger that has not come yet.
const maxPending = 64

// State is what a call reports beyond its answer.
type State struct {
	// LoadFailed is set when a corrupt tags.json was moved aside and no successful
	// write has happened since the call that found it (that call included).
	LoadFailed bool
	// PersistErr is set when a mutation changed the map in memory but could not
	// write tags.json.
	PersistErr error
}

// UnreadableError means tags.json exists but could not be read, is not a regular file
// owned by this process's user, or is corrupt and could not be moved aside. The store
// refuses to act on it so the file is never overwritten or followed.
type UnreadableError struct {
	Err error
}

// Error returns the reason, without the "tags store unreadable" prefix the plugin adds.
func (e *UnreadableError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *UnreadableError) Unwrap() error { return e.Err }

// FullError means a mutation was refused because tags.json would have grown larger
// than Limit bytes, which the store would then refuse to read. Nothing was changed.
type FullError struct {
	Limit int
}

// Error says why the change was refused; it is the whole message the plugin prints.
func (e *FullError) Error() string {
	return fmt.Sprintf("tags store full: the change would make %s larger than %d bytes", FileName, e.Limit)
}

// Option changes how Open builds a Store.
type Option func(*Store)

// WithClock makes the store read the time from now, which names corrupt files moved
// aside. Tests use it to get a known name.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// Store is the tag map of one plugin process. It is safe for concurrent use.
type Store struct {
	mu       sync.Mutex
	path     string // empty: memory only, no file
	lockPath string
	now      func() time.Time
	maxBytes int // MaxFileBytes; tests lower it

	tags       map[string]string
	seen       snapshot // tags.json as the map last matched it
	loadFailed bool
	reported   bool // an answer has carried LoadFailed since the corrupt file was found
	unreadable error
	pending    []notice // warnings found without a logger
}

// snapshot is tags.json as read at one moment.
type snapshot struct {
	info os.FileInfo // nil when there was no file
	data []byte
}

// notice is a warning waiting for a logger.
type notice struct {
	msg  string
	args []any
}

// Open returns the store for dataDir: it removes temp files an interrupted write left
// beside tags.json, then loads tags.json. An empty dataDir gives a memory-only store
// that never touches the disk, as upstream does when the agent configures no data
// dir. Problems reading the file do not fail Open: they are reported by every later
// call (see Read and Update). log may be nil; warnings (a corrupt file moved aside,
// leftovers removed) are then logged by the first later call given a logger.
func Open(ctx context.Context, dataDir string, log hclog.Logger, opts ...Option) *Store {
	s := &Store{tags: map[string]string{}, now: time.Now, maxBytes: MaxFileBytes}
	for _, o := range opts {
		o(s)
	}
	if dataDir == "" {
		return s
	}
	s.path = filepath.Join(dataDir, FileName)
	s.lockPath = s.path + LockSuffix
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removeStale(ctx, log)
	if err := s.refresh(ctx, log, false); err != nil && log != nil {
		log.Warn("tags: store unreadable", "path", s.path, "error", err)
	}
	s.inheritLoadFailed(dataDir)
	return s
}

// inheritLoadFailed carries the load_failed state across processes: while no
// tags.json has been written since a corrupt one was moved aside, there is no tags.json
// and a moved-aside file lies beside its path. An earlier child of this plugin may
// have found the file and stopped (an idle stop, a crash, the agent's restart) before
// any answer told of it, or after telling only some; without this, the next child would
// answer as if nothing had been lost. A later successful write ends the state, as in
// one process.
func (s *Store) inheritLoadFailed(dataDir string) {
	if s.loadFailed || s.unreadable != nil || s.seen.info != nil {
		return
	}
	entries, err := os.ReadDir(dataDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), FileName+CorruptInfix) {
			s.loadFailed = true
			s.reported = false
			return
		}
	}
}

// Path returns the store file's path, or "" for a memory-only store.
func (s *Store) Path() string { return s.path }

// Read brings the map up to date with tags.json when an lstat shows the file changed,
// then calls fn with the map. fn must not keep or change the map.
func (s *Store) Read(ctx context.Context, log hclog.Logger, fn func(tags map[string]string)) (State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flush(log)
	if s.path != "" {
		if err := s.refresh(ctx, log, false); err != nil {
			return State{}, &UnreadableError{Err: err}
		}
	}
	fn(s.tags)
	return s.answer(nil), nil
}

// Update applies fn to a copy of the map and, unless the result is too large
// (*FullError: nothing changes), makes it the map and rewrites tags.json, always, even
// when fn changed nothing (upstream rewrites after every set, delete and clear). While
// it works it holds the lock file, and it first re-reads tags.json if another process
// changed it.
//
// A write that fails leaves the change in memory and reports it in State.PersistErr.
// Without the lock no write is attempted (it could lose another process's update);
// that too is a PersistErr. An unreadable tags.json stops the update before fn runs.
func (s *Store) Update(ctx context.Context, log hclog.Logger, fn func(tags map[string]string)) (State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flush(log)
	if s.path == "" {
		fn(s.tags)
		return State{}, nil
	}
	lock, lockErr := s.lock(ctx)
	if lockErr == nil {
		defer lock.release()
	}
	if err := s.refresh(ctx, log, lockErr == nil); err != nil {
		return State{}, &UnreadableError{Err: err}
	}
	next, data, err := s.apply(fn)
	if err != nil {
		return State{}, err
	}
	s.tags = next
	if lockErr != nil {
		return s.answer(lockErr), nil
	}
	err = atomicfile.WriteMode(s.path, data, fileMode)
	var dirSync *atomicfile.DirSyncError
	if errors.As(err, &dirSync) {
		// The new content is in place; only its durability across a power cut is
		// in doubt, so this is a warning, as upstream treats it.
		s.warn(log, "tags: "+err.Error(), "path", s.path)
		err = nil
	}
	if err != nil {
		return s.answer(err), nil
	}
	if info, err := os.Lstat(s.path); err == nil {
		s.seen = snapshot{info: info, data: data}
	} else {
		s.seen = snapshot{}
	}
	if s.loadFailed && s.reported {
		// An earlier answer told of the corrupt file; this write ends the state.
		s.loadFailed = false
		return State{}, nil
	}
	// The corrupt file was found by this call (or at Open, and nobody has been told
	// yet): the write succeeded, but the tags that were lost must still be reported,
	// by this answer and the next ones until another write succeeds.
	return s.answer(nil), nil
}

// apply runs fn on a copy of the map and encodes the result, refusing it when the
// file would be larger than the store reads back.
func (s *Store) apply(fn func(map[string]string)) (map[string]string, []byte, error) {
	next := maps.Clone(s.tags)
	fn(next)
	data, err := Encode(next)
	if err != nil {
		return nil, nil, err
	}
	if len(data) > s.maxBytes {
		return nil, nil, &FullError{Limit: s.maxBytes}
	}
	return next, data, nil
}

// answer returns the state of a call that completes with persistErr, and records that
// a LoadFailed it carries has been reported.
func (s *Store) answer(persistErr error) State {
	if s.loadFailed {
		s.reported = true
	}
	return State{LoadFailed: s.loadFailed, PersistErr: persistErr}
}

// warn logs a warning on log, or keeps it for the next call with a logger when log is
// nil (Open at configure time gets none).
func (s *Store) warn(log hclog.Logger, msg string, args ...any) {
	if log != nil {
		log.Warn(msg, args...)
		return
	}
	if len(s.pending) < maxPending {
		s.pending = append(s.pending, notice{msg: msg, args: args})
	}
}

// flush logs the warnings kept for lack of a logger.
func (s *Store) flush(log hclog.Logger) {
	if log == nil {
		return
	}
	for _, n := range s.pending {
		log.Warn(n.msg, n.args...)
	}
	s.pending = nil
}

// lock makes sure the data dir exists (creating it 0700) and takes the lock file.
func (s *Store) lock(ctx context.Context) (*fileLock, error) {
	if err := atomicfile.MkdirAll(filepath.Dir(s.path), dirMode); err != nil {
		return nil, err
	}
	return acquireLock(ctx, s.lockPath)
}

// removeStale deletes the temp files that writes interrupted by a crash left beside
// tags.json. A temp file of a write in progress looks the same, so this happens under
// the lock, which every writer holds; it is only taken when there is something to
// remove, so opening a clean store creates nothing.
func (s *Store) removeStale(ctx context.Context, log hclog.Logger) {
	entries, err := os.ReadDir(filepath.Dir(s.path))
	if err != nil {
		return
	}
	found := false
	for _, e := range entries {
		if atomicfile.IsTempName(FileName, e.Name()) {
			found = true
			break
		}
	}
	if !found {
		return
	}
	lock, err := s.lock(ctx)
	if err != nil {
		s.warn(log, "tags: leftover temp files not removed: "+err.Error(), "path", s.path)
		return
	}
	defer lock.release()
	removed, err := atomicfile.RemoveStale(s.path)
	for _, p := range removed {
		s.warn(log, "tags: removed temp file left by an interrupted write: "+p, "path", p)
	}
	if err != nil {
		s.warn(log, "tags: "+err.Error(), "path", s.path)
	}
}

// refresh brings the map in line with tags.json. Under the file lock (locked) it
// compares the file's content, because the coming write must not lose another
// process's update; otherwise an lstat showing the same file, size and mtime is taken
// to mean nothing changed. After an unreadable result it always reads again, so a
// repaired file is picked up by the next call.
func (s *Store) refresh(ctx context.Context, log hclog.Logger, locked bool) error {
	if !locked && s.unreadable == nil {
		info, err := os.Lstat(s.path)
		if unchanged(s.seen.info, info, err) {
			return nil
		}
	}
	cur, err := s.readDisk()
	if err != nil {
		s.unreadable = err
		return err
	}
	s.unreadable = nil
	switch {
	case cur.info == nil:
		if s.seen.info != nil {
			// The file went away (removed by hand, or moved aside by another
			// process): there are no tags any more.
			s.tags = map[string]string{}
		}
		// Otherwise the map may hold changes a failed write could not save;
		// they stay, as upstream's map does.
		s.seen = snapshot{}
		return nil
	case s.seen.info != nil && bytes.Equal(cur.data, s.seen.data):
		s.seen = cur
		return nil
	}
	tags, decodeErr := Decode(cur.data)
	if decodeErr == nil {
		s.tags = tags
		s.seen = cur
		return nil
	}
	if !locked {
		// Moving the file aside changes the data dir, so it happens under the lock,
		// after reading again: another process may have replaced the file already.
		lock, err := s.lock(ctx)
		if err != nil {
			s.unreadable = fmt.Errorf("%v; not moved aside: %w", decodeErr, err)
			return s.unreadable
		}
		defer lock.release()
		return s.refresh(ctx, log, true)
	}
	moved, err := s.moveAside()
	if err != nil {
		s.unreadable = fmt.Errorf("%v; not moved aside: %w", decodeErr, err)
		return s.unreadable
	}
	s.warn(log, "tags: corrupt "+s.path+" moved aside to "+moved+"; starting with no tags",
		"path", s.path, "moved_to", moved, "reason", decodeErr.Error())
	s.tags = map[string]string{}
	s.seen = snapshot{}
	s.loadFailed = true
	s.reported = false
	return nil
}

// unchanged reports whether an lstat of tags.json (info, err) shows the file the map
// was last loaded from, or still no file.
func unchanged(old, info os.FileInfo, err error) bool {
	if err != nil {
		return old == nil
	}
	return old != nil && os.SameFile(old, info) && old.Size() == info.Size() && old.ModTime().Equal(info.ModTime())
}

// readDisk reads tags.json. No file, or a path that cannot hold one (a parent is a
// regular file, a parent cannot be searched), gives an empty snapshot: that is a
// problem for the next write, not for reading. Anything at the path that is not a
// regular file of ours, or that cannot be read, is an error. The file is opened
// without following a link and without blocking, and its type, owner and link count
// are checked on the open descriptor, so nothing can be swapped in between.
func (s *Store) readDisk() (snapshot, error) {
	f, info, err := openData(s.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return snapshot{}, nil
		}
		if _, lerr := os.Lstat(s.path); lerr != nil {
			return snapshot{}, nil
		}
		return snapshot{}, err
	}
	defer f.Close()
	data, err := safefile.ReadAll(f, info, int64(s.maxBytes))
	if err != nil {
		return snapshot{}, err
	}
	return snapshot{info: info, data: data}, nil
}

// moveAside renames tags.json to tags.json.corrupt-<UTC time>, adding -1, -2, ... when
// that name is taken. The caller holds the lock, so no other yuzu process races it.
func (s *Store) moveAside() (string, error) {
	base := s.path + CorruptInfix + s.now().UTC().Format("20060102T150405Z")
	for n := 0; n < 1000; n++ {
		name := base
		if n > 0 {
			name = fmt.Sprintf("%s-%d", base, n)
		}
		if _, err := os.Lstat(name); err == nil {
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if err := os.Rename(s.path, name); err != nil {
			return "", err
		}
		return name, nil
	}
	return "", fmt.Errorf("%s-1 to -999 all exist", base)
}
