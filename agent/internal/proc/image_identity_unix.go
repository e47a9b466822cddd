//go:build !windows

package proc

import (
	"os"

	"golang.org/x/sys/unix"
)

// fileID is what tells a file from any other and from itself changed: its device and
// inode, size, and modification and change times to the nanosecond the file system
// keeps. The change time cannot be set back by anyone: a write, a chmod, a rename
// over the path all move it.
type fileID struct {
	dev, ino, size      uint64
	mtimeSec, mtimeNsec int64
	ctimeSec, ctimeNsec int64
}

// identify reads f's identity from its descriptor.
func identify(f *os.File) (fileID, bool) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fileID{}, false
	}
	return fileID{
		dev: uint64(st.Dev), ino: uint64(st.Ino), size: uint64(st.Size),
		mtimeSec: int64(st.Mtim.Sec), mtimeNsec: int64(st.Mtim.Nsec),
		ctimeSec: int64(st.Ctim.Sec), ctimeNsec: int64(st.Ctim.Nsec),
	}, true
}
