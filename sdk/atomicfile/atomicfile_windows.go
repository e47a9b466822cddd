package atomicfile

import (
	"io/fs"
	"os"

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
