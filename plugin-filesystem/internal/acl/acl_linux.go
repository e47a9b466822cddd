package acl

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
	"golang.org/x/sys/unix"
)

// xattrMax is the largest extended attribute value Linux stores (XATTR_SIZE_MAX), so a
// buffer of this size always holds the whole ACL in one read.
const xattrMax = 64 << 10

const (
	xattrAccess  = "system.posix_acl_access"
	xattrDefault = "system.posix_acl_default"
)

// procFD names an open descriptor as a path; a test points it elsewhere to exercise
// the fallback for systems without /proc.
var procFD = "/proc/self/fd/"

// Gather reads the owner, mode and POSIX ACLs of path, a canonical path from
// pathcheck.Validate, and returns the get_acl rows. The file is opened with O_PATH and
// no link followed (beneath base when it is set), and everything is read through
// that descriptor, so the rows describe one file even if the path is swapped
// meanwhile; O_PATH also means a FIFO or device is never really opened. Both ACLs
// are read and parsed before any row is built: a failure is one error, never half a
// listing.
func Gather(ctx context.Context, path string, base *pathcheck.Base) ([]Row, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := pathcheck.OpenIn(base, path, unix.O_PATH, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var info POSIXInfo
	var st unix.Stat_t
	var access, def []byte
	var accessErr, defErr error
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var statErr error
	if err := rc.Control(func(fd uintptr) {
		if statErr = unix.Fstat(int(fd), &st); statErr != nil {
			return
		}
		access, accessErr = readACL(int(fd), path, &st, xattrAccess)
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			def, defErr = readACL(int(fd), path, &st, xattrDefault)
		}
	}); err != nil {
		return nil, err
	}
	if statErr != nil {
		return nil, fmt.Errorf("stat failed: %w", statErr)
	}
	info.Mode = st.Mode
	switch {
	case isUnsupported(accessErr) || isUnsupported(defErr):
		info.Status = StatusUnsupported
	case accessErr != nil:
		return nil, fmt.Errorf("reading %s: %w", xattrAccess, accessErr)
	case defErr != nil:
		return nil, fmt.Errorf("reading %s: %w", xattrDefault, defErr)
	default:
		info.Status = StatusNone
		if access != nil {
			if info.Access, err = ParsePOSIX(access); err != nil {
				return nil, fmt.Errorf("%s: %w", xattrAccess, err)
			}
			info.Status = StatusExtended
		}
		if def != nil {
			if info.Default, err = ParsePOSIX(def); err != nil {
				return nil, fmt.Errorf("%s: %w", xattrDefault, err)
			}
			info.Status = StatusExtended
		}
	}
	names := newIDNames()
	info.Owner, info.Group = names.user(st.Uid), names.group(st.Gid)
	return POSIXRows(info, func(tag uint16, id uint32) string {
		if tag == TagUser {
			return names.user(id)
		}
		return names.group(id)
	}), nil
}

// readACL returns the attribute's value, nil when the file has none, or the error.
// The value is read through /proc/self/fd, which reaches the open descriptor's file;
// where /proc is not mounted it falls back to the path and checks that the path
// still names the same file.
func readACL(fd int, path string, st *unix.Stat_t, name string) ([]byte, error) {
	buf := make([]byte, xattrMax)
	n, err := unix.Getxattr(procFD+strconv.Itoa(fd), name, buf)
	if errors.Is(err, unix.ENOENT) {
		n, err = unix.Getxattr(path, name, buf)
		if err == nil || errors.Is(err, unix.ENODATA) {
			var now unix.Stat_t
			if serr := unix.Stat(path, &now); serr != nil || now.Dev != st.Dev || now.Ino != st.Ino {
				return nil, pathcheck.ErrChanged
			}
		}
	}
	switch {
	case errors.Is(err, unix.ENODATA):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return append([]byte(nil), buf[:n]...), nil
}

func isUnsupported(err error) bool {
	return errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP)
}
