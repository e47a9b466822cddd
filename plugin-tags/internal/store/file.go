package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/yuzugo/yuzu/sdk/safefile"
)

// openData opens the store file at path for reading when it is a regular file of ours.
// safefile.Open refuses a symbolic link, never blocks on a FIFO and checks the type on
// the open descriptor; vetFile adds the store's own checks (owner, link count), also
// on the descriptor's stat, so nothing can be swapped in between. A missing file gives
// an error wrapping fs.ErrNotExist.
func openData(path string) (*os.File, fs.FileInfo, error) {
	f, fi, err := safefile.Open(path)
	if err != nil {
		return nil, nil, err
	}
	if err := vetFile(f, fi); err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// openLockFile opens the lock file at path, creating it with mode 0600 when missing.
// An existing one is opened as the store file is, read-only (a lock needs no write
// access, and a read-only file system or a lock file without write permission must
// still be lockable), and is narrowed to 0600 when it is wider: anyone who can open
// it can lock it and hold every write up.
func openLockFile(path string) (*os.File, error) {
	// O_EXCL never follows a symbolic link, dangling or not: anything already at
	// path makes this fail, and the open below judges it.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode)
	if err == nil {
		if err := setMode(f); err != nil {
			_ = f.Close()
			return nil, err
		}
		return f, nil
	}
	createErr := err
	f, fi, err := openData(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !errors.Is(createErr, fs.ErrExist) {
			// Nothing is there because it could not be created: that is the
			// reason to give (a data dir without write permission, a full disk).
			return nil, createErr
		}
		return nil, err
	}
	// Failing to narrow an old lock file (read-only file system) is not worth
	// refusing the lock.
	_ = narrowMode(f, fi)
	return f, nil
}

// tooManyLinks is the refusal of a file with other hard links: each write of ours
// makes a new file with one link, so another link was made by someone else, and the
// content may be a file they could not read themselves.
func tooManyLinks(path string, n uint64) error {
	return fmt.Errorf("%s has %d hard links, not 1", path, n)
}
