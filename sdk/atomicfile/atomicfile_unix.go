//go:build !windows

package atomicfile

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

func openExclusive(name string, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// setDirMode gives the directory just created at dir exactly perm. It changes the
// mode through a descriptor opened without following a link, so a directory swapped
// for a symlink in the meantime makes it fail instead of changing the link's target.
func setDirMode(dir string, perm fs.FileMode) error {
	fd, err := openRetry(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC)
	if err != nil {
		return &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	for {
		err = unix.Fchmod(fd, uint32(perm))
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return &fs.PathError{Op: "chmod", Path: dir, Err: err}
	}
	return nil
}

func openRetry(path string, flags int) (int, error) {
	for {
		fd, err := unix.Open(path, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// removeEntry unlinks path. unlink never removes a directory, so an entry replaced by
// one after the caller's check is left alone.
func removeEntry(path string) error {
	if err := unix.Unlink(path); err != nil {
		return &fs.PathError{Op: "remove", Path: path, Err: err}
	}
	return nil
}

func rename(from, to string) error { return os.Rename(from, to) }
