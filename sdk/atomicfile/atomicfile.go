// Package atomicfile replaces a file's content so that a reader sees either the whole
// old content or the whole new content, never a mix, and a crash never leaves a
// half-written file under the target name.
//
// The steps: create the parent directories if missing; create a sibling temp file
// `<name>.tmp.<16 hex>` with O_CREAT|O_EXCL|O_NOFOLLOW (an existing file at that path
// fails the write: it is never followed or overwritten); write; fsync; close; rename
// over the target; fsync the directory. An existing regular target keeps its
// permission bits; a new file gets 0666 minus the umask. The rename gives the target a
// new inode, so a symlink or hard link at the target is replaced by a regular file.
// The temp file is removed on any failure after it was created.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// tempName returns the sibling temp path for target.
func tempName(target string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return target + ".tmp." + hex.EncodeToString(b[:]), nil
}

// Write atomically replaces the content of path with data.
func Write(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	// An existing regular file keeps its permission bits; anything else (missing,
	// symlink, device) gets the default mode.
	// Mode 0 is a real mode (nobody may read), so whether to keep is a separate flag.
	var keep fs.FileMode
	keepMode := false
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		keep, keepMode = fi.Mode().Perm(), true
	}
	tmp, err := tempName(path)
	if err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	f, err := openExclusive(tmp, 0o666)
	if err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	if keepMode {
		if err := f.Chmod(keep); err != nil {
			_ = f.Close()
			return fmt.Errorf("atomic write %s: %w", path, err)
		}
	}
	if err := syncFile(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("atomic write %s: fsync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	if err := replace(tmp, path); err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	committed = true
	// The rename is done; a failure to sync the directory only weakens durability
	// across a power cut, so it is reported but does not undo anything.
	if err := syncDir(dir); err != nil && !errors.Is(err, errDirSyncUnsupported) {
		return &DirSyncError{Dir: dir, Err: err}
	}
	return nil
}

// DirSyncError reports that the content was replaced but the directory entry could
// not be flushed to disk.
type DirSyncError struct {
	Dir string
	Err error
}

// Error says what happened.
func (e *DirSyncError) Error() string { return "fsync directory " + e.Dir + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *DirSyncError) Unwrap() error { return e.Err }

var errDirSyncUnsupported = errors.New("directory sync unsupported")
