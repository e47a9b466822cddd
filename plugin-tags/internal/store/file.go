package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/yuzugo/yuzu/sdk/safefile"
)

// notRegular is the refusal of an entry at path whose type, mode, is not a regular file.
func notRegular(path string, mode fs.FileMode) error {
	return fmt.Errorf("%s is %s", path, safefile.Describe(mode))
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
