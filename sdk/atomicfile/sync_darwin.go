package atomicfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncFile asks the drive itself to flush (F_FULLFSYNC); plain fsync on macOS only
// reaches the drive's cache. Filesystems without F_FULLFSYNC fall back to fsync.
func syncFile(f *os.File) error {
	if _, err := unix.FcntlInt(f.Fd(), unix.F_FULLFSYNC, 0); err == nil {
		return nil
	}
	return f.Sync()
}
