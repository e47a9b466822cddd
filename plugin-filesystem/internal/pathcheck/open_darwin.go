package pathcheck

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openAt relies on O_NOFOLLOW_ANY (macOS 11 and later; Go itself needs macOS 12):
// the kernel refuses a symbolic link in any element of the path. The path is
// canonical, so it holds no "..", and the base check after opening is a second look
// at the same fact.
func openAt(base, path string, flag int, perm os.FileMode) (*os.File, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Open(path, flag|unix.O_NOFOLLOW_ANY|unix.O_CLOEXEC, uint32(perm.Perm()))
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("open %s: %w", path, ErrSymlink)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	if base != "" {
		real, err := realPath(f)
		if err != nil {
			f.Close()
			return nil, err
		}
		if !Contains(base, real) {
			f.Close()
			return nil, fmt.Errorf("open %s: %w", path, ErrOutside)
		}
	}
	return f, nil
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
