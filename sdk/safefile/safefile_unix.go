//go:build unix

package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

func openNoFollow(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	// Back to blocking reads: O_NONBLOCK was only there so that opening a FIFO cannot
	// hang, and Open refuses anything but a regular file anyway.
	_ = unix.SetNonblock(fd, false)
	return os.NewFile(uintptr(fd), path), nil
}

// isSymlinkErr tells a refused symbolic link (ELOOP from O_NOFOLLOW) from other
// failures.
func isSymlinkErr(err error) bool { return errors.Is(err, unix.ELOOP) }

// Owned reports, for a file or directory's stat, whether it belongs to root or to the
// user this process runs as (its effective uid) — the only users whose files the agent
// trusts with what it runs or believes.
func Owned(fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("owned by uid %d, not by root or by the agent's user (uid %d)", st.Uid, os.Geteuid())
	}
	return nil
}

// Trusted reports whether only trusted users can change a file or directory: it is
// Owned and neither group- nor world-writable. A directory with the sticky bit (such
// as /tmp) may be writable by all when sticky is true: others can add entries there
// but not rename or remove ours.
func Trusted(fi fs.FileInfo, sticky bool) error {
	if err := Owned(fi); err != nil {
		return err
	}
	perm := fi.Mode().Perm()
	if perm&0o022 == 0 {
		return nil
	}
	if sticky && fi.IsDir() && fi.Mode()&fs.ModeSticky != 0 {
		return nil
	}
	return fmt.Errorf("group- or world-writable (mode %04o)", perm)
}

// TrustedFile is Trusted for an open file f whose stat is fi. On Unix the stat has the
// owner and mode bits, so f is not needed; Windows reads the owner and DACL from f.
func TrustedFile(_ *os.File, fi fs.FileInfo, sticky bool) error { return Trusted(fi, sticky) }

// TrustedPath is Trusted for path, whose Lstat is fi. On Unix the stat says it all;
// Windows opens path to read its owner and DACL.
func TrustedPath(_ string, fi fs.FileInfo, sticky bool) error { return Trusted(fi, sticky) }

// Private reports whether only its owner (and root) can read the open file f, whose
// stat is fi: a file that holds a secret (a key, a token) should be neither group- nor
// world-readable. The error says who else can read it.
func Private(_ *os.File, fi fs.FileInfo) error {
	if perm := fi.Mode().Perm(); perm&0o044 != 0 {
		return fmt.Errorf("readable by group or others (mode %04o)", perm)
	}
	return nil
}
