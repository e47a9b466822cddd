package safefile

import (
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

func openNoFollow(path string) (*os.File, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	// FILE_FLAG_OPEN_REPARSE_POINT opens a symbolic link or junction itself rather
	// than its target; Open then refuses it because it is not a regular file.
	h, err := windows.CreateFile(p, windows.GENERIC_READ,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil,
		windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OPEN_REPARSE_POINT|windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(h), path), nil
}

func isSymlinkErr(error) bool { return false }

// Owned is not checked on Windows, where access is governed by ACLs the agent's
// installer sets on its directories.
func Owned(fs.FileInfo) error { return nil }

// Trusted is not checked on Windows; see Owned.
func Trusted(fs.FileInfo, bool) error { return nil }
