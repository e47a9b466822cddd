//go:build unix

package store

import (
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Open flags for the data and lock files: never follow a symbolic link at the path,
// and never block (opening a FIFO would otherwise wait for a writer forever).
const (
	readFlags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	lockFlags = unix.O_RDWR | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
)

// openData opens the store file at path for reading, if it is a regular file of ours.
func openData(path string) (*os.File, error) {
	fd, err := openRetry(path, readFlags, 0)
	if err != nil {
		return nil, openError(path, err)
	}
	return checked(fd, path)
}

// openLockFile opens the lock file at path, creating it with mode 0600 when missing,
// if it is a regular file of ours.
func openLockFile(path string) (*os.File, error) {
	fd, err := openRetry(path, lockFlags|unix.O_CREAT|unix.O_EXCL, fileMode)
	created := err == nil
	if err == unix.EEXIST || err == unix.EACCES || err == unix.EROFS {
		fd, err = openRetry(path, lockFlags, 0)
	}
	if err == unix.EACCES || err == unix.EROFS {
		// On a read-only file system, or for a lock file without write permission,
		// a read-only descriptor is enough: flock needs no write access.
		fd, err = openRetry(path, readFlags, 0)
	}
	if err != nil {
		return nil, openError(path, err)
	}
	f, err := checked(fd, path)
	if err != nil {
		return nil, err
	}
	// A new lock file gets exactly 0600 (the umask may have taken more); an old one
	// readable by others is narrowed, since anyone who can open it can lock it and
	// hold every write up. Failing to narrow an old one (read-only file system) is
	// not worth refusing the lock.
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err == nil && (created || st.Mode&0o7777 != fileMode) {
		if err := f.Chmod(fileMode); err != nil && created {
			_ = f.Close()
			return nil, err
		}
	}
	return f, nil
}

// checked returns fd as a file when it is a regular file owned by this process's
// effective user with a single link, and closes it otherwise. The checks use fstat
// on the descriptor itself, so the entry cannot be swapped between check and use.
func checked(fd int, path string) (*os.File, error) {
	if err := checkFd(fd, path); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	// The file is regular, so blocking reads are fine and need no poller.
	if err := unix.SetNonblock(fd, false); err != nil {
		_ = unix.Close(fd)
		return nil, &fs.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

func checkFd(fd int, path string) error {
	var st unix.Stat_t
	for {
		err := unix.Fstat(fd, &st)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "fstat", Path: path, Err: err}
		}
		break
	}
	var mode fs.FileMode
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		mode = fs.ModeDir
	case unix.S_IFIFO:
		mode = fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode = fs.ModeSocket
	case unix.S_IFCHR, unix.S_IFBLK:
		mode = fs.ModeDevice
	case unix.S_IFLNK:
		mode = fs.ModeSymlink
	default:
		mode = fs.ModeIrregular
	}
	if mode != 0 {
		return notRegular(path, mode)
	}
	if euid := os.Geteuid(); st.Uid != uint32(euid) {
		return fmt.Errorf("%s is owned by uid %d, not by this process's uid %d", path, st.Uid, euid)
	}
	if n := uint64(st.Nlink); n > 1 {
		return tooManyLinks(path, n)
	}
	return nil
}

func openRetry(path string, flags int, perm uint32) (int, error) {
	for {
		fd, err := unix.Open(path, flags, perm)
		if err != unix.EINTR {
			return fd, err
		}
	}
}
