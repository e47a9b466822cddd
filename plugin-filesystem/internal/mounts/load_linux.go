package mounts

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// maxMountinfo caps how much of /proc/self/mountinfo is read. A host with
// thousands of container mounts stays far below it; a larger table is not
// parsed in part, because a partial list could miss a network mount.
const maxMountinfo = 16 << 20

const mountinfoPath = "/proc/self/mountinfo"

// Load reads the mount list of the current process. Any failure, including a
// list over 16 MiB, wraps ErrUnavailable.
func Load() (*Table, error) {
	data, err := readCapped(mountinfoPath, maxMountinfo)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	ms, err := ParseMountinfo(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("%w: %s lists no mounts", ErrUnavailable, mountinfoPath)
	}
	return NewTable(ms), nil
}

// readCapped reads a whole file opened without following a final symlink
// and without blocking on a FIFO, and refuses one longer than limit.
func readCapped(path string, limit int) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	// procfs reports size 0, so grow the buffer as the text arrives.
	buf := make([]byte, 0, 64<<10)
	for {
		if len(buf) == cap(buf) {
			if len(buf) > limit {
				return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
			}
			nb := make([]byte, len(buf), min(2*cap(buf), limit+1))
			copy(nb, buf)
			buf = nb
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
		}
	}
	return buf, nil
}
