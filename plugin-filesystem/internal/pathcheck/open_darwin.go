package pathcheck

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dirFlags open a directory the resolution of a base walks through. macOS has no
// O_PATH; the agent runs as root, which may read every directory.
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC

// openAt relies on O_NOFOLLOW_ANY (macOS 11 and later; Go itself needs macOS 12):
// the kernel refuses a symbolic link in any element of the path. With a base the
// path is opened relative to the held directory; being canonical it holds no "..",
// so without links it cannot leave it, and the check of the open file's path after
// opening is a second look at the same fact.
func openAt(b *Base, path string, flag int, perm os.FileMode) (*os.File, error) {
	dirfd, name := unix.AT_FDCWD, path
	if b != nil {
		dirfd, name = int(b.dir.Fd()), rel(b.path, path)
	}
	fd, err := openatRetry(dirfd, name, flag|unix.O_NOFOLLOW_ANY, uint32(perm.Perm()))
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("open %s: %w", path, ErrSymlink)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	if b != nil {
		real, err := realPath(f)
		if err != nil {
			f.Close()
			return nil, err
		}
		if !Contains(b.path, real) {
			f.Close()
			return nil, fmt.Errorf("open %s: %w", path, ErrOutside)
		}
	}
	return f, nil
}

// statAt describes path without opening it (a device could act on an open): it is
// looked at by name, and the answer is kept only when the entry found by name is the
// one in its directory opened beneath b (or from the root) without a link on the
// way, so a description of something a swapped link led to is never returned.
func statAt(b *Base, path string) (fs.FileInfo, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("open %s: %w", path, ErrSymlink)
	}
	want, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("stat %s: no system stat", path)
	}
	var st unix.Stat_t
	if b != nil && path == b.path {
		err = unix.Fstat(int(b.dir.Fd()), &st)
	} else {
		dir, name := filepath.Split(path)
		var d *os.File
		if d, err = openAt(b, filepath.Clean(dir), unix.O_RDONLY|unix.O_DIRECTORY, 0); err != nil {
			return nil, err
		}
		err = fstatatRetry(int(d.Fd()), name, &st)
		d.Close()
	}
	if err != nil {
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if uint64(st.Dev) != uint64(want.Dev) || st.Ino != want.Ino {
		return nil, fmt.Errorf("stat %s: %w", path, ErrChanged)
	}
	return fi, nil
}

// linkFlags open a link itself rather than what it points to.
const linkFlags = unix.O_SYMLINK | unix.O_RDONLY | unix.O_NONBLOCK

// linkTarget reads the target by name: macOS reads no link through a descriptor. The
// directory is one nobody but root and the agent's user may change, or (sticky) the
// link is theirs, so nobody else can put another link there in between.
func linkTarget(dir *os.File, _ *os.File, name string) (string, error) {
	return readlinkAt(int(dir.Fd()), name)
}

// realPath asks the kernel with F_GETPATH. x/sys has no wrapper taking a buffer for
// that command, so the buffer goes through the F_PREALLOCATE wrapper, whose argument
// is a plain pointer: fcntl hands it to the kernel unchanged, and the kernel writes
// at most MAXPATHLEN bytes there.
func realPath(f *os.File) (string, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return "", err
	}
	buf := make([]byte, unix.PathMax)
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		ferr = unix.FcntlFstore(fd, unix.F_GETPATH, (*unix.Fstore_t)(unsafe.Pointer(&buf[0])))
	}); err != nil {
		return "", err
	}
	if ferr != nil {
		return "", fmt.Errorf("real path of %s: %w", f.Name(), ferr)
	}
	if i := bytes.IndexByte(buf, 0); i >= 0 {
		buf = buf[:i]
	}
	return string(buf), nil
}
