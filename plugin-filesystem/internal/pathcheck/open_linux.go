package pathcheck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// haveOpenat2 probes openat2 once per process. Only ENOSYS (kernel before 5.6, or a
// seccomp filter answering that way) and EPERM (a filter that refuses it) mean the
// call is missing, and only they switch the process to the openat fallback for the
// rest of its life. Any other failure (EMFILE, ENOMEM, EINTR) is transient and says
// nothing about the kernel: caching it as "missing" would downgrade every later open
// for good, so the probe reports openat2 present and the real opens decide. The probe
// opens "/" with O_PATH, which needs no permission on it.
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

// forceWalk makes the package take the openat fallback on a kernel that has
// openat2, so tests cover both paths. It is atomic because a walk that a test
// abandoned (hashwalk answers without a walker stuck in a system call) may still
// be opening files when the next test flips it.
var forceWalk atomic.Bool

// useOpenat2 is read on every open: one atomic load and the probe's cached answer.
func useOpenat2() bool { return !forceWalk.Load() && haveOpenat2() }

// Openat2Available reports whether the kernel lets this process use openat2, which
// refuses a symbolic link in every element of a path. Without it the package walks
// paths one element at a time with O_NOFOLLOW. Tests use it to know which modes
// they can run.
func Openat2Available() bool { return haveOpenat2() }

// ForceFallback makes every open of this package, OpenBeneath included, take the
// openat fallback even where openat2 works (on true), or go back to the probe's
// choice (on false). It exists for tests of this package and of its users; the
// agent never calls it.
func ForceFallback(on bool) { forceWalk.Store(on) }

// OpenBeneath opens name relative to the directory descriptor dirfd without
// following a symbolic link in any element of name, and returns the raw
// descriptor, close-on-exec. It is for walkers that hold a directory open and
// visit its entries one by one; Open and OpenIn are for whole paths.
//
// Either dirfd is an open directory and name is relative to it, or dirfd is
// unix.AT_FDCWD and name is an absolute, clean path. A relative name never
// leaves dirfd: openat2 enforces that with RESOLVE_BENEATH, the fallback by
// refusing every ".." element (ErrNotCanonical), so callers should pass names
// without them. flags are open(2) flags; creating is not supported, and O_CREAT
// or O_TMPFILE fail with EINVAL.
//
// A name with no slash costs one system call in either mode, which keeps a walk
// at one open per entry; a longer name without openat2 is opened one element at
// a time. Errors are the system's, except ErrNotCanonical and ErrSymlink from
// the element-by-element fallback; IsSymlinkErr tells a refused link apart from
// other failures.
func OpenBeneath(dirfd int, name string, flags int) (int, error) {
	if flags&unix.O_CREAT != 0 || flags&unix.O_TMPFILE == unix.O_TMPFILE {
		return -1, unix.EINVAL
	}
	if useOpenat2() {
		how := unix.OpenHow{
			Flags:   uint64(flags) | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_NO_SYMLINKS,
		}
		if dirfd != unix.AT_FDCWD {
			how.Resolve |= unix.RESOLVE_BENEATH
		}
		return openat2Retry(dirfd, name, &how)
	}
	if name != ".." && strings.IndexByte(name, '/') < 0 {
		return openatRetry(dirfd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	return walkOpen(dirfd, name, flags, 0)
}

// dirFlags open a directory the resolution of a base walks through: O_PATH asks
// for no permission on it beyond search, and opens nothing for reading.
const dirFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC

func openAt(b *Base, path string, flag int, perm os.FileMode) (*os.File, error) {
	return openWith(b, path, flag, perm, useOpenat2())
}

// openWith opens path with or without openat2; tests run both. With a base the
// open is resolved from its held directory, beneath it.
func openWith(b *Base, path string, flag int, perm os.FileMode, useOpenat2 bool) (*os.File, error) {
	mode := uint32(perm.Perm())
	dirfd, name, resolve := unix.AT_FDCWD, path, uint64(0)
	if b != nil {
		dirfd, name, resolve = int(b.dir.Fd()), rel(b.path, path), unix.RESOLVE_BENEATH
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

// statAt describes path through an O_PATH descriptor opened without following any
// link (beneath b when set): nothing is really opened, a FIFO or a device included.
func statAt(b *Base, path string) (fs.FileInfo, error) {
	f, err := openAt(b, path, unix.O_PATH, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}

// linkFlags open a link itself rather than what it points to.
const linkFlags = unix.O_PATH | unix.O_NOFOLLOW

// linkTarget reads the target through the descriptor of the link itself, so its owner
// and its target are those of one link.
func linkTarget(_ *os.File, link *os.File, _ string) (string, error) {
	return readlinkAt(int(link.Fd()), "")
}

func openNoFollow(dirfd int, name string, flag int, mode uint32, resolve uint64, useOpenat2 bool) (int, error) {
	if !useOpenat2 {
		return walkOpen(dirfd, name, flag, mode)
	}
	how := unix.OpenHow{
		Flags:   uint64(flag) | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | resolve,
	}
	// openat2 refuses a mode without O_CREAT or O_TMPFILE. O_TMPFILE includes the
	// O_DIRECTORY bit, so only all of its bits mean a temporary file.
	if flag&unix.O_CREAT != 0 || flag&unix.O_TMPFILE == unix.O_TMPFILE {
		how.Mode = uint64(mode)
	}
	return openat2Retry(dirfd, name, &how)
}

// openat2Retry calls openat2, retrying an interrupted call and EAGAIN, which a
// concurrent rename or mount makes a RESOLVE_BENEATH lookup answer to ask for a
// retry. The retries are bounded so that someone renaming in a loop cannot keep
// the agent here.
func openat2Retry(dirfd int, name string, how *unix.OpenHow) (int, error) {
	for tries := 0; ; tries++ {
		fd, err := unix.Openat2(dirfd, name, how)
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
			if errors.Is(err, unix.ENOTDIR) {
				// What was a directory on the way is not one now: a link swapped
				// in and out again before classify looked, or another file.
				err = ErrChanged
			}
			unix.Close(cur)
			return -1, err
		}
		unix.Close(cur)
		cur = next
	}
	unix.Close(cur) // not reached: the loop returns at the last element
	return -1, ErrNotCanonical
}

// classify turns the error of a no-follow open into ErrSymlink when the element is a
// link: O_NOFOLLOW reports ELOOP for the last element, O_DIRECTORY reports ENOTDIR
// for a directory element.
func classify(dirfd int, name string, err error) error {
	if IsSymlinkErr(dirfd, name, err) {
		return ErrSymlink
	}
	return err
}

func wrapOpen(path string, err error) error {
	switch {
	case errors.Is(err, ErrSymlink), errors.Is(err, ErrNotCanonical), errors.Is(err, ErrChanged):
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

// OpenEntry is OpenBeneath for one entry of the directory dirfd, named by a
// NUL-terminated name (the name's bytes, then a 0) that holds no '/' and is not
// "." or "..", as a directory listing gives them. It makes no copy of the name:
// OpenBeneath's string costs an allocation per open (golang.org/x/sys copies it
// to add the NUL), which a walk over hundreds of thousands of files turns into
// megabytes of heap that nothing collects before the walk ends.
func OpenEntry(dirfd int, nameZ []byte, flags int) (int, error) {
	if len(nameZ) < 2 || nameZ[len(nameZ)-1] != 0 || flags&unix.O_CREAT != 0 || flags&unix.O_TMPFILE == unix.O_TMPFILE {
		return -1, unix.EINVAL
	}
	if useOpenat2() {
		how := unix.OpenHow{Flags: uint64(flags) | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH}
		for tries := 0; ; tries++ {
			r, _, errno := unix.Syscall6(unix.SYS_OPENAT2, uintptr(dirfd), uintptr(unsafe.Pointer(&nameZ[0])),
				uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how), 0, 0)
			if (errno == unix.EAGAIN || errno == unix.EINTR) && tries < 16 {
				continue
			}
			if errno != 0 {
				return -1, errno
			}
			return int(r), nil
		}
	}
	for {
		r, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(&nameZ[0])),
			uintptr(flags|unix.O_NOFOLLOW|unix.O_CLOEXEC), 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return -1, errno
		}
		return int(r), nil
	}
}
