package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// notRegular is the refusal of an entry at path whose type, mode, is not a regular file.
func notRegular(path string, mode fs.FileMode) error {
	var what string
	switch {
	case mode&fs.ModeSymlink != 0:
		what = "a symbolic link"
	case mode.IsDir():
		what = "a directory"
	case mode&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	case mode&fs.ModeDevice != 0, mode&fs.ModeCharDevice != 0:
		what = "a device"
	default:
		return fmt.Errorf("%s is not a regular file", path)
	}
	return fmt.Errorf("%s is %s", path, what)
}

// openError turns a failed open of path into the error to report. When something other
// than a regular file is at path (the open failed because it is a link, a directory,
// a socket), the error says what it is; otherwise it is the open's own error, which
// wraps fs.ErrNotExist when nothing is there. The lstat only words the message: the
// open has already refused.
func openError(path string, err error) error {
	pathErr := &fs.PathError{Op: "open", Path: path, Err: err}
	if errors.Is(pathErr, fs.ErrNotExist) {
		return pathErr
	}
	if fi, lerr := os.Lstat(path); lerr == nil && !fi.Mode().IsRegular() {
		return notRegular(path, fi.Mode())
	}
	return pathErr
}

// tooManyLinks is the refusal of a file with other hard links: each write of ours
// makes a new file with one link, so another link was made by someone else, and the
// content may be a file they could not read themselves.
func tooManyLinks(path string, n uint64) error {
	return fmt.Errorf("%s has %d hard links, not 1", path, n)
}
