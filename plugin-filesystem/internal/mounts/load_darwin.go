package mounts

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// maxMounts caps the mount list read on macOS (each entry is about 2 KiB, so
// the cap matches the 16 MiB allowed for the Linux text).
const maxMounts = 8192

// Load reads the mount list with getfsstat(MNT_NOWAIT), which returns the
// kernel's cached statistics and never asks a file server, so a dead network
// mount cannot block it. Any failure wraps ErrUnavailable.
func Load() (*Table, error) {
	ms, err := loadFsstat()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return NewTable(ms), nil
}

func loadFsstat() ([]Mount, error) {
	// The list can grow between the sizing call and the fetch; a fetch that
	// fills the whole buffer may have been cut, so retry with more room.
	for attempt := 0; attempt < 4; attempt++ {
		n, err := unix.Getfsstat(nil, unix.MNT_NOWAIT)
		if err != nil {
			return nil, fmt.Errorf("getfsstat: %w", err)
		}
		if n > maxMounts {
			return nil, fmt.Errorf("getfsstat: %d mounts exceed the cap of %d", n, maxMounts)
		}
		buf := make([]unix.Statfs_t, n+8)
		got, err := unix.Getfsstat(buf, unix.MNT_NOWAIT)
		if err != nil {
			return nil, fmt.Errorf("getfsstat: %w", err)
		}
		if got >= len(buf) {
			continue
		}
		ms := make([]Mount, 0, got)
		for i := range buf[:got] {
			s := &buf[i]
			ms = append(ms, Mount{
				Point:  cString(s.Mntonname[:]),
				FSType: cString(s.Fstypename[:]),
				Source: cString(s.Mntfromname[:]),
				Remote: s.Flags&unix.MNT_LOCAL == 0,
			})
		}
		return ms, nil
	}
	return nil, fmt.Errorf("getfsstat: mount list kept changing")
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
