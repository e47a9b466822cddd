// Package atomicfile replaces a file's content so that a reader sees either the whole
// old content or the whole new content, never a mix, and a crash never leaves a
// half-written file under the target name.
//
// The steps: create the parent directories if missing; create a sibling temp file
// `<name>.tmp.<16 lowercase hex>` with O_CREAT|O_EXCL|O_NOFOLLOW (an existing file at
// that path fails the write: it is never followed or overwritten); write; set the
// mode; fsync; close; rename over the target; fsync the directory. The rename gives
// the target a new inode, so a symlink or hard link at the target is replaced by a
// regular file. The temp file is removed on any failure after it was created.
//
// On Windows the rename fails while another process has either file open without
// FILE_SHARE_DELETE, as virus scanners, backup agents and indexers do for a moment;
// it is retried for up to two seconds (docs/windows.md).
//
// Modes: Write keeps the permission bits of an existing regular target and gives a new
// file 0666 minus the umask; WriteMode gives the file exactly the mode asked for. In
// both cases the temp file is created with the final mode (or a narrower one, when the
// umask takes bits away until the explicit chmod), so its content is never readable
// by more users than the finished file's.
//
// A crash between the temp file's creation and the rename leaves the temp file behind;
// RemoveStale deletes such leftovers.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// tempInfix separates the target's name from the random suffix of its temp files.
const tempInfix = ".tmp."

// tempHexLen is the length of the random suffix: 8 random bytes in lowercase hex.
const tempHexLen = 16

// TempName returns a fresh sibling temp path for target, in the pattern IsTempName
// recognises (<target>.tmp.<16 hex digits>): a writer that must create its file some
// other way than Write (through a directory descriptor, say) names it with this, so a
// leftover of a crash is still found and removed by RemoveStale.
func TempName(target string) (string, error) {
	var b [tempHexLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return target + tempInfix + hex.EncodeToString(b[:]), nil
}

// testHookCreated, when set by a test, is called with the temp file's path right after
// its creation, before any byte is written.
var testHookCreated func(tmp string)

// Write atomically replaces the content of path with data. An existing regular file
// keeps its permission bits; a new file, or one replacing a symlink or other
// non-regular file, gets 0666 minus the umask. Missing parent directories are created
// with 0777 minus the umask.
func Write(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	// Mode 0 is a real mode (nobody may read), so whether to keep is a separate flag.
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		return write(path, data, fi.Mode().Perm(), true)
	}
	return write(path, data, 0o666, false)
}

// WriteMode atomically replaces the content of path with data and gives the file
// exactly the permission bits of perm, whatever the umask and whatever mode an
// existing file had. Missing parent directories are created with perm plus the
// search (x) bit wherever perm has the read bit (0600 gives 0700, 0644 gives 0755),
// also whatever the umask. On Windows only the owner-write bit has an effect (without
// it the file is read-only), as with os.Chmod.
func WriteMode(path string, data []byte, perm fs.FileMode) error {
	perm = perm.Perm()
	if err := MkdirAll(filepath.Dir(path), perm|(perm&0o444)>>2); err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	return write(path, data, perm, true)
}

// write does the atomic replacement. The temp file is created with perm, so the umask
// can only narrow it; with exact set, an explicit chmod then gives it exactly perm.
func write(path string, data []byte, perm fs.FileMode, exact bool) error {
	dir := filepath.Dir(path)
	tmp, err := TempName(path)
	if err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	f, err := openExclusive(tmp, perm)
	if err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = os.Remove(tmp)
		}
	}()
	if testHookCreated != nil {
		testHookCreated(tmp)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	if exact {
		if err := f.Chmod(perm); err != nil {
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
	if err := rename(tmp, path); err != nil {
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

// MkdirAll creates dir and any missing parents, as os.MkdirAll does, but every
// directory it creates gets exactly the permission bits of perm, whatever the umask.
// Directories that already exist, and symbolic links to directories on the way, are
// left as they are. On Windows perm has no effect.
func MkdirAll(dir string, perm fs.FileMode) error {
	dir = filepath.Clean(dir)
	if fi, err := os.Stat(dir); err == nil {
		if fi.IsDir() {
			return nil
		}
		return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := MkdirAll(parent, perm); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm.Perm()); err != nil {
		// Someone else may have created it meanwhile; that is as good.
		if fi, lerr := os.Lstat(dir); lerr == nil && fi.IsDir() {
			return nil
		}
		return err
	}
	return setDirMode(dir, perm.Perm())
}

// RemoveStale removes the temp files that interrupted writes of target left behind:
// the entries of target's directory named exactly `<name>.tmp.<16 lowercase hex>` that
// are regular files or symbolic links. A symbolic link is removed itself, never
// followed; anything else (a directory, a FIFO) and every other name is left alone.
// It returns the paths it removed. Entries that could not be removed are reported in
// the error, after the others have been tried.
//
// A temp file of a write still in progress looks the same as a leftover, so the caller
// must make sure no other writer of target is at work, for instance by holding the
// lock it writes under.
func RemoveStale(target string) ([]string, error) {
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("remove stale temp files of %s: %w", target, err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !IsTempName(base, e.Name()) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		if !fi.Mode().IsRegular() && fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		if err := removeEntry(p); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		removed = append(removed, p)
	}
	if len(errs) > 0 {
		return removed, fmt.Errorf("remove stale temp files of %s: %w", target, errors.Join(errs...))
	}
	return removed, nil
}

// IsTempName reports whether name is the name of a temp file that a write of a target
// named base creates: base, ".tmp.", then exactly 16 lowercase hex digits.
func IsTempName(base, name string) bool {
	suffix, ok := strings.CutPrefix(name, base+tempInfix)
	if !ok || base == "" || len(suffix) != tempHexLen {
		return false
	}
	for i := 0; i < len(suffix); i++ {
		c := suffix[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
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

// SyncFile flushes f to the drive, as Write does its files: on macOS through
// F_FULLFSYNC (plain fsync there reaches only the drive's cache).
func SyncFile(f *os.File) error { return syncFile(f) }

// SyncDir flushes a directory's entries (a new name, a rename) to disk, as Write does
// after its rename. Where a directory cannot be flushed (Windows: NTFS journals its
// metadata), it does nothing.
func SyncDir(dir string) error {
	if err := syncDir(dir); err != nil && !errors.Is(err, errDirSyncUnsupported) {
		return err
	}
	return nil
}
