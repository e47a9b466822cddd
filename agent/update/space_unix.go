//go:build !windows

package update

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// checkSpace refuses to start a download that the file system of dir cannot hold.
func checkSpace(dir string, need int64) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("free space of %s: %w", dir, err)
	}
	if free := int64(st.Bavail) * int64(st.Bsize); free < need {
		return fmt.Errorf("%s has %d bytes free, an update needs %d: not started", dir, free, need)
	}
	return nil
}
