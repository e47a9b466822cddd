package main

import "golang.org/x/sys/unix"

// publish gives the complete file tmp of the pinned directory its final name, and fails
// (EEXIST) when that name is taken: renameatx_np with RENAME_EXCL renames without ever
// replacing, so the name only ever shows the whole new file.
func (d *pinnedDir) publish(tmp, name string) error {
	fd := int(d.f.Fd())
	return unix.RenameatxNp(fd, tmp, fd, name, unix.RENAME_EXCL)
}
