package pathcheck

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// haveOpenat2 probes openat2 once per process. ENOSYS (kernel before 5.6, or a
// seccomp filter answering that way) and EPERM (a filter that refuses it) mean the
// walk fallback is used for the rest of the process's life.
var haveOpenat2 = sync.OnceValue(func() bool {
	fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM)
	}
	unix.Close(fd)
	return true
})

// forceWalk makes tests take the fallback path on a kernel that has openat2.
var forceWalk bool

func openAt(base, path string, flag int, perm os.FileMode) (*os.File, error) {
	return openWith(base, path, flag, perm, haveOpenat2() && !forceWalk)
}

// openWith opens path with or without openat2; tests run both.
func openWith(base, path string, flag int, perm os.FileMode, useOpenat2 bool) (*os.File, error) {
	mode := uint32(perm.Perm())
	dirfd, name, resolve := unix.AT_FDCWD, path, uint64(0)
	if base != "" {
		// The base is canonical, so opening it must meet no link either; a base
		// swapped for a link since it was canonicalised fails here.
		bfd, err := openNoFollow(unix.AT_FDCWD, base, unix.O_PATH|unix.O_DIRECTORY, 0, 0, useOpenat2)
		if err != nil {
			return nil, wrapOpen(base, err)
		}
		defer unix.Close(bfd)
		dirfd, resolve = bfd, unix.RESOLVE_BENEATH
		name = strings.TrimLeft(path[len(base):], "/")
		if name == "" {
			name = "."
		}
	}
	fd, err := openNoFollow(dirfd, name, flag, mode, resolve, useOpenat2)
	if err != nil {
		return nil, wrapOpen(path, err)
	}
	if flag&unix.O_PATH != 0 {
		// An O_PATH open can return a descriptor of a link itself instead of
		// failing; refuse that.
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, wrapOpen(path, err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(fd)
			return nil, wrapOpen(path, ErrSymlink)
		}
	}
	return os.NewFile(uintptr(fd), path), nil
}

func openNoFollow(dirfd int, name string, flag int, mode uint32, resolve uint64, useOpenat2 bool) (int, error) {
	if !useOpenat2 {
		return walkOpen(dirfd, name, flag, mode)
	}
	how := unix.OpenHow{
		Flags:   uint64(flag) | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | resolve,
	}
	if flag&(unix.O_CREAT|unix.O_TMPFILE) != 0 {
		how.Mode = uint64(mode) // openat2 refuses a mode without O_CREAT
	}
	for tries := 0; ; tries++ {
		fd, err := unix.Openat2(dirfd, name, &how)
		// EAGAIN: a concurrent rename or mount made the kernel give up a
		// RESOLVE_BENEATH lookup; it asks to be retried.
		if (errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR)) && tries < 16 {
			continue
		}
		return fd, err
	}
}

// walkOpen opens name relative to dirfd one element at a time, each directory with
// O_NOFOLLOW|O_DIRECTORY relative to its parent's descriptor, so a link in any
// element stops the walk. An absolute name starts from "/".
func walkOpen(dirfd int, name string, flag int, mode uint32) (int, error) {
	var cur int
	var err error
	if strings.HasPrefix(name, "/") {
		cur, err = unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		name = strings.TrimLeft(name, "/")
	} else {
		cur, err = unix.FcntlInt(uintptr(dirfd), unix.F_DUPFD_CLOEXEC, 0)
	}
	if err != nil {
		return -1, err
	}
	if name == "" {
		name = "."
	}
	parts := strings.Split(name, "/")
	for i, part := range parts {
		if part == "" || part == ".." || (part == "." && len(parts) > 1) {
			unix.Close(cur)
			return -1, ErrNotCanonical
		}
		if i == len(parts)-1 {
			fd, err := openatRetry(cur, part, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
			if err != nil {
				err = classify(cur, part, err)
			}
			unix.Close(cur)
			return fd, err
		}
		next, err := openatRetry(cur, part, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			err = classify(cur, part, err)
			unix.Close(cur)
			return -1, err
		}
		unix.Close(cur)
		cur = next
	}
	unix.Close(cur) // not reached: the loop returns at the last element
	return -1, ErrNotCanonical
}

func openatRetry(dirfd int, name string, flag int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flag, mode)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// classify turns the error of a no-follow open into ErrSymlink when the element is a
// link: O_NOFOLLOW reports ELOOP for the last element, O_DIRECTORY reports ENOTDIR
// for a directory element.
func classify(dirfd int, name string, err error) error {
	if errors.Is(err, unix.ELOOP) {
		return ErrSymlink
	}
	if errors.Is(err, unix.ENOTDIR) {
		var st unix.Stat_t
		if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return ErrSymlink
		}
	}
	return err
}

func wrapOpen(path string, err error) error {
	switch {
	case errors.Is(err, ErrSymlink), errors.Is(err, ErrNotCanonical):
		return fmt.Errorf("open %s: %w", path, err)
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("open %s: %w", path, ErrSymlink)
	case errors.Is(err, unix.EXDEV):
		// RESOLVE_BENEATH refused to leave the base directory.
		return fmt.Errorf("open %s: %w", path, ErrOutside)
	}
	return &os.PathError{Op: "open", Path: path, Err: err}
}

func realPath(f *os.File) (string, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return "", err
	}
	var p string
	var rerr error
	if err := rc.Control(func(fd uintptr) {
		p, rerr = os.Readlink("/proc/self/fd/" + strconv.Itoa(int(fd)))
	}); err != nil {
		return "", err
	}
	if rerr != nil {
		return "", fmt.Errorf("real path of %s: %w", f.Name(), rerr)
	}
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("real path of %s: %q is not a path", f.Name(), p)
	}
	return p, nil
}
