//go:build linux || darwin

package pathcheck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/sdk/safefile"
)

// IsSymlinkErr reports whether err, returned by a no-follow open of name relative
// to dirfd (OpenBeneath, or openat with O_NOFOLLOW), means that the open met a
// symbolic link: in the last element of name, or with OpenBeneath in any element.
// Such opens report ELOOP (ErrSymlink from the fallback walk), but with
// O_DIRECTORY the kernel may check the type first and report ENOTDIR; then the
// name itself is looked at, without following it. That costs one fstatat, and
// only on that error.
func IsSymlinkErr(dirfd int, name string, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrSymlink), errors.Is(err, unix.ELOOP):
		return true
	case errors.Is(err, unix.ENOTDIR):
		var st unix.Stat_t
		return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
	}
	return false
}

// maxLinks bounds the links one resolution follows, as the kernel bounds them
// (MAXSYMLINKS is 40 on Linux, 32 on macOS).
const maxLinks = 40

// frame is a directory the resolution has entered, held open.
type frame struct {
	f    *os.File
	name string // its name in the previous frame; "" for the root
	// shared: writable by others (which safefile allows only with the sticky bit),
	// so an entry found in it is trusted only when it is root's or ours.
	shared bool
	// taint names the first directory on the way to this one, this one included,
	// that another user can change, and why; "" while there is none.
	taint string
}

// resolver walks a path from the root as the kernel would, but one element at a
// time through held descriptors, judging each directory and link it meets.
type resolver struct {
	strict bool // OpenBase's policy: refuse at the first directory or link others can change
	stack  []frame
}

// openDir resolves raw and returns the directory it names, held open. strict is
// OpenBase's policy, false OpenDir's (see there).
func openDir(raw string, strict bool) (*Base, error) {
	abs, err := absolute(raw)
	if err != nil {
		return nil, err
	}
	r := &resolver{strict: strict}
	defer r.closeAll()
	fd, err := openatRetry(unix.AT_FDCWD, "/", dirFlags, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: "/", Err: err}
	}
	if err := r.push(fd, ""); err != nil {
		return nil, err
	}
	todo := strings.Split(abs, "/")
	links := 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			// Back to the directory this one was entered from, held open: a
			// ".." after a link climbs out of its target, and nobody can move
			// the way back meanwhile.
			if len(r.stack) > 1 {
				r.pop()
			}
			continue
		}
		top := r.top()
		// Most elements are directories: open first, and look at what the entry
		// is only when that fails (one system call less per element).
		fd, oerr := openatRetry(int(top.f.Fd()), name, dirFlags|unix.O_NOFOLLOW, 0)
		if oerr == nil {
			if err := r.push(fd, name); err != nil {
				return nil, err
			}
			continue
		}
		var st unix.Stat_t
		if err := fstatatRetry(int(top.f.Fd()), name, &st); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotExist, &os.PathError{Op: "lstat", Path: r.join(name), Err: err})
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			if errors.Is(oerr, unix.ENOTDIR) || errors.Is(oerr, unix.ELOOP) {
				// Something else a moment ago, a directory now.
				return nil, fmt.Errorf("%s: %w", r.join(name), ErrChanged)
			}
			return nil, &os.PathError{Op: "open", Path: r.join(name), Err: oerr}
		case unix.S_IFLNK:
			if links++; links > maxLinks {
				return nil, fmt.Errorf("%w: %w", ErrNotExist, &os.PathError{Op: "resolve", Path: abs, Err: unix.ELOOP})
			}
			target, err := r.follow(name)
			if err != nil {
				return nil, err
			}
			if strings.HasPrefix(target, "/") {
				for len(r.stack) > 1 {
					r.pop()
				}
			}
			todo = append(strings.Split(target, "/"), todo...)
		default:
			if strings.Trim(strings.Join(todo, ""), ".") != "" {
				return nil, fmt.Errorf("%w: %w", ErrNotExist, &os.PathError{Op: "open", Path: r.join(name), Err: unix.ENOTDIR})
			}
			return nil, fmt.Errorf("%s: %w", r.join(name), ErrNotDir)
		}
	}
	top := r.top()
	if r.strict {
		fi, err := top.f.Stat()
		if err != nil {
			return nil, err
		}
		if err := safefile.Trusted(fi, false); err != nil {
			return nil, &UntrustedError{Path: r.path(), Reason: "is " + err.Error()}
		}
	}
	b := &Base{path: r.path(), dir: top.f}
	r.stack = r.stack[:len(r.stack)-1]
	return b, nil
}

// push enters the directory open at fd, called name, and judges it: under the strict
// policy a directory that another user can change is refused; otherwise it taints
// what lies below it.
func (r *resolver) push(fd int, name string) error {
	f := os.NewFile(uintptr(fd), name)
	fr := frame{f: f, name: name}
	if len(r.stack) > 0 {
		fr.taint = r.top().taint
	}
	r.stack = append(r.stack, fr)
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: %w", r.path(), ErrChanged)
	}
	top := &r.stack[len(r.stack)-1]
	top.shared = fi.Mode().Perm()&0o022 != 0
	// Trusted asks for root's or our ownership too, which is what makes an entry of
	// a sticky directory others can write to safe: they cannot rename or remove it.
	if err := safefile.Trusted(fi, true); err != nil {
		return r.untrusted(top, err)
	}
	return nil
}

// untrusted records that the directory on top can be changed by another user: an
// error under the strict policy, a taint of everything below it otherwise.
func (r *resolver) untrusted(top *frame, why error) error {
	if r.strict {
		return &UntrustedError{Path: r.path(), Reason: "is " + why.Error()}
	}
	if top.taint == "" {
		top.taint = r.path() + ", which is " + why.Error()
	}
	return nil
}

// follow reads the link called name in the directory on top, which may be followed
// only when no user other than root and the agent's user can have chosen its target:
// nothing on the way is tainted, and in a directory others can write to the link is
// root's or ours.
func (r *resolver) follow(name string) (string, error) {
	top := r.top()
	if top.taint != "" {
		return "", &UntrustedError{Path: r.join(name), Reason: "is a symbolic link below " + top.taint}
	}
	target, fi, err := readLinkAt(top.f, name)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotExist, &os.PathError{Op: "readlink", Path: r.join(name), Err: err})
	}
	if top.shared {
		// Others can write here (the sticky bit allowed it): a link of theirs
		// points wherever they like.
		if err := safefile.Owned(fi); err != nil {
			return "", &UntrustedError{Path: r.join(name), Reason: "is a symbolic link " + err.Error() +
				", in a directory others can write to"}
		}
	}
	if target == "" {
		return "", fmt.Errorf("%w: %s is an empty link", ErrNotExist, r.join(name))
	}
	return target, nil
}

func (r *resolver) top() *frame { return &r.stack[len(r.stack)-1] }

func (r *resolver) pop() {
	r.top().f.Close()
	r.stack = r.stack[:len(r.stack)-1]
}

func (r *resolver) closeAll() {
	for len(r.stack) > 0 {
		r.pop()
	}
}

// path is the canonical path of the directory on top.
func (r *resolver) path() string {
	if len(r.stack) <= 1 {
		return "/"
	}
	var b strings.Builder
	for _, fr := range r.stack[1:] {
		b.WriteByte('/')
		b.WriteString(fr.name)
	}
	return b.String()
}

// join is the path of name in the directory on top.
func (r *resolver) join(name string) string {
	if p := r.path(); p != "/" {
		return p + "/" + name
	}
	return "/" + name
}

// readlinkAt reads the target of the link name in the directory dirfd ("" with a
// descriptor of the link itself, on Linux), whatever its length.
func readlinkAt(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if errors.Is(err, unix.EINTR) {
			size /= 2
			continue
		}
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

func openatRetry(dirfd int, name string, flag int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flag|unix.O_CLOEXEC, mode)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

func fstatatRetry(dirfd int, name string, st *unix.Stat_t) error {
	for {
		err := unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// readLinkAt reads the link name in dir: its stat through a descriptor of the link
// itself, so the owner judged is the link's, and its target (linkTarget, per system).
func readLinkAt(dir *os.File, name string) (string, fs.FileInfo, error) {
	fd, err := openatRetry(int(dir.Fd()), name, linkFlags, 0)
	if err != nil {
		return "", nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", nil, err
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return "", nil, ErrChanged
	}
	target, err := linkTarget(dir, f, name)
	return target, fi, err
}

// rel is path, a canonical path inside base, relative to base: "." for base itself.
func rel(base, path string) string {
	name := strings.TrimLeft(path[len(base):], "/")
	if name == "" {
		return "."
	}
	return name
}
