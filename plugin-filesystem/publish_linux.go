package main

import (
	"errors"

	"golang.org/x/sys/unix"
)

// publish gives the complete file tmp of the pinned directory its final name, and fails
// with an error wrapping EEXIST when that name is taken: the name only ever shows the
// whole new file, and never replaces one that appeared meanwhile. renameat2 with
// RENAME_NOREPLACE does both at once; a filesystem without that flag gets a hard link
// (which never replaces either) followed by removing the temporary name.
func (d *pinnedDir) publish(tmp, name string) error {
	fd := int(d.f.Fd())
	err := unix.Renameat2(fd, tmp, fd, name, unix.RENAME_NOREPLACE)
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
		return err
	}
	if err := unix.Linkat(fd, tmp, fd, name, 0); err != nil {
		return err
	}
	_ = unix.Unlinkat(fd, tmp, 0)
	return nil
}
