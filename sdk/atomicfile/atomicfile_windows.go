package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/windows"
)

// openExclusive creates name with CREATE_NEW, which fails on any existing entry,
// including a symbolic link, so nothing is ever followed or overwritten.
func openExclusive(name string, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
}

// Windows has no directory handle to flush; the rename is durable once MoveFileEx
// returns on NTFS's journal.
func syncDir(string) error { return errDirSyncUnsupported }

// setDirMode does nothing: a new directory's access is given by the ACL it inherits.
func setDirMode(string, fs.FileMode) error { return nil }

// removeEntry deletes the file or file symlink at path. DeleteFile never removes a
// directory, so an entry replaced by one after the caller's check is left alone.
func removeEntry(path string) error {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return &fs.PathError{Op: "remove", Path: path, Err: err}
	}
	if err := windows.DeleteFile(p); err != nil {
		return &fs.PathError{Op: "remove", Path: path, Err: err}
	}
	return nil
}

// renameRetryFor bounds how long rename keeps trying while the files are held.
var renameRetryFor = 2 * time.Second

// testHookRenameRetry, when set by a test, is called with the error of each attempt
// that is retried, before the wait.
var testHookRenameRetry func(err error)

// rename moves from over to with MoveFileEx(MOVEFILE_REPLACE_EXISTING), as os.Rename
// does. Replacing a file needs delete access to it, so while any other handle has the
// target (or the temp file) open without FILE_SHARE_DELETE the move fails with
// ERROR_SHARING_VIOLATION, or ERROR_ACCESS_DENIED when the holder has it mapped or
// its delete is pending. Virus scanners, backup agents and search indexers open new
// and changed files that way for a moment, and so does any reader using os.Open, so
// the move is retried, waiting 1 ms, then twice as long each time up to 100 ms, for
// renameRetryFor in all. Any other error, or the same one past the bound, is returned.
func rename(from, to string) error {
	deadline := time.Now().Add(renameRetryFor)
	wait := time.Millisecond
	for {
		err := os.Rename(from, to)
		if err == nil || !heldOpen(err) || time.Now().After(deadline) {
			return err
		}
		if testHookRenameRetry != nil {
			testHookRenameRetry(err)
		}
		time.Sleep(wait)
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// heldOpen tells whether a failed move may succeed once another handle is closed.
func heldOpen(err error) bool {
	return errors.Is(err, windows.ERROR_SHARING_VIOLATION) || errors.Is(err, windows.ERROR_ACCESS_DENIED)
}
