// Package store keeps the tags plugin's key/value map and its file, <data dir>/tags.json.
//
// The map lives in memory and every mutation rewrites the whole file atomically
// (sdk/atomicfile), as upstream does. On top of upstream (DECISIONS 15 and 23):
//
//   - a corrupt tags.json (not JSON, not an object, a value that is not a string) is
//     never overwritten: it is renamed to tags.json.corrupt-<UTC time>, the store
//     starts empty and every answer carries LoadFailed until this process next writes
//     the file successfully;
//   - a tags.json that exists but cannot be read is never overwritten either: every
//     call returns an *UnreadableError, and the next call tries again;
//   - several processes may share the data dir: a mutation holds an exclusive advisory
//     lock on tags.json.lock, re-reads tags.json if its content changed, applies the
//     change and rewrites the file, so no update is lost; a read re-reads the file
//     when a stat shows it changed.
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
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/sdk/atomicfile"
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

// MaxFileBytes bounds the tags.json this store will read. Upstream caps a value at 448
// bytes and a key at 64; a file this large is not one we wrote, and reading it whole
// could exhaust memory, so it is reported unreadable (and left alone) instead.
const MaxFileBytes = 16 << 20

// State is what a call reports beyond its answer.
type State struct {
	// LoadFailed is set while a corrupt tags.json has been moved aside and this
	// process has not yet written the file successfully since.
	LoadFailed bool
	// PersistErr is set when a mutation changed the map in memory but could not
	// write tags.json.
	PersistErr error
}

// UnreadableError means tags.json exists but could not be read (or is corrupt and could
// not be moved aside). The store refuses to act on it so the file is never overwritten.
type UnreadableError struct {
	Err error
}

// Error returns the reason, without the "tags store unreadable" prefix the plugin adds.
func (e *UnreadableError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *UnreadableError) Unwrap() error { return e.Err }

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

	tags       map[string]string
	seen       snapshot // tags.json as the map last matched it
	loadFailed bool
	unreadable error
}

// snapshot is tags.json as read at one moment.
type snapshot struct {
	info os.FileInfo // nil when there was no file
	data []byte
}

// Open returns the store for dataDir and loads tags.json from it. An empty dataDir
// gives a memory-only store that never touches the disk, as upstream does when the
// agent configures no data dir. Problems reading the file do not fail Open: they are
// reported by every later call (see Read and Update). log may be nil.
func Open(ctx context.Context, dataDir string, log hclog.Logger, opts ...Option) *Store {
	s := &Store{tags: map[string]string{}, now: time.Now}
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
	if err := s.refresh(ctx, orNull(log), false); err != nil {
		orNull(log).Warn("tags: store unreadable", "path", s.path, "error", err)
	}
	return s
}

// Path returns the store file's path, or "" for a memory-only store.
func (s *Store) Path() string { return s.path }

// Read brings the map up to date with tags.json when a stat shows the file changed,
// then calls fn with the map. fn must not keep or change the map.
func (s *Store) Read(ctx context.Context, log hclog.Logger, fn func(tags map[string]string)) (State, error) {
	log = orNull(log)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.path != "" {
		if err := s.refresh(ctx, log, false); err != nil {
			return State{}, &UnreadableError{Err: err}
		}
	}
	fn(s.tags)
	return State{LoadFailed: s.loadFailed}, nil
}

// Update applies fn to the map and rewrites tags.json, always, even when fn changed
// nothing (upstream rewrites after every set, delete and clear). While it works it
// holds the lock file, and it first re-reads tags.json if another process changed it.
//
// A write that fails leaves the change in memory and reports it in State.PersistErr.
// Without the lock no write is attempted (it could lose another process's update);
// that too is a PersistErr. An unreadable tags.json stops the update before fn runs.
func (s *Store) Update(ctx context.Context, log hclog.Logger, fn func(tags map[string]string)) (State, error) {
	log = orNull(log)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.path == "" {
		fn(s.tags)
		return State{}, nil
	}
	lock, err := s.lock(ctx)
	if err != nil {
		if rerr := s.refresh(ctx, log, false); rerr != nil {
			return State{}, &UnreadableError{Err: rerr}
		}
		fn(s.tags)
		return State{LoadFailed: s.loadFailed, PersistErr: err}, nil
	}
	defer lock.release()
	if err := s.refresh(ctx, log, true); err != nil {
		return State{}, &UnreadableError{Err: err}
	}
	fn(s.tags)
	data, err := Encode(s.tags)
	if err == nil {
		err = atomicfile.Write(s.path, data)
	}
	var dirSync *atomicfile.DirSyncError
	if errors.As(err, &dirSync) {
		// The new content is in place; only its durability across a power cut is
		// in doubt, so this is a warning, as upstream treats it.
		log.Warn("tags: "+err.Error(), "path", s.path)
		err = nil
	}
	if err != nil {
		return State{LoadFailed: s.loadFailed, PersistErr: err}, nil
	}
	s.loadFailed = false
	if info, err := os.Stat(s.path); err == nil {
		s.seen = snapshot{info: info, data: data}
	} else {
		s.seen = snapshot{}
	}
	return State{}, nil
}

// lock makes sure the data dir exists and takes the lock file.
func (s *Store) lock(ctx context.Context) (*fileLock, error) {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o777); err != nil {
		return nil, err
	}
	return acquireLock(ctx, s.lockPath)
}

// refresh brings the map in line with tags.json. Under the file lock (locked) it
// compares the file's content, because the coming write must not lose another
// process's update; otherwise a stat showing the same file, size and mtime is taken
// to mean nothing changed. After an unreadable result it always reads again, so a
// repaired file is picked up by the next call.
func (s *Store) refresh(ctx context.Context, log hclog.Logger, locked bool) error {
	if !locked && s.unreadable == nil {
		info, err := os.Stat(s.path)
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
	log.Warn("tags: corrupt tags.json moved aside; starting with no tags", "moved_to", moved, "reason", decodeErr.Error())
	s.tags = map[string]string{}
	s.seen = snapshot{}
	s.loadFailed = true
	return nil
}

// unchanged reports whether a stat of tags.json (info, err) shows the file the map was
// last loaded from, or still no file.
func unchanged(old, info os.FileInfo, err error) bool {
	if err != nil {
		return old == nil
	}
	return old != nil && os.SameFile(old, info) && old.Size() == info.Size() && old.ModTime().Equal(info.ModTime())
}

// readDisk reads tags.json. No file, or a path that cannot hold one (a parent is a
// regular file, a parent cannot be searched), gives an empty snapshot: that is a
// problem for the next write (DECISIONS 23), not for reading. A file that exists but
// cannot be read is an error.
func (s *Store) readDisk() (snapshot, error) {
	info, err := os.Stat(s.path)
	if err != nil {
		return snapshot{}, nil
	}
	if info.IsDir() {
		return snapshot{}, fmt.Errorf("%s is a directory", s.path)
	}
	if !info.Mode().IsRegular() {
		// Opening a FIFO would block; a device is not a store.
		return snapshot{}, fmt.Errorf("%s is not a regular file", s.path)
	}
	f, err := os.Open(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return snapshot{}, nil // removed between the stat and the open
	}
	if err != nil {
		return snapshot{}, err
	}
	defer f.Close()
	info, err = f.Stat()
	if err != nil {
		return snapshot{}, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return snapshot{}, err
	}
	if len(data) > MaxFileBytes {
		return snapshot{}, fmt.Errorf("%s is larger than %d bytes", s.path, MaxFileBytes)
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

func orNull(log hclog.Logger) hclog.Logger {
	if log == nil {
		return hclog.NewNullLogger()
	}
	return log
}
