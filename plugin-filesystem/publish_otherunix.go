//go:build unix && !linux && !darwin

package main

import "golang.org/x/sys/unix"

// publish gives the complete file tmp of the pinned directory its final name through a
// hard link, which fails (EEXIST) rather than replace a name that appeared meanwhile,
// then removes the temporary name.
func (d *pinnedDir) publish(tmp, name string) error {
	fd := int(d.f.Fd())
	if err := unix.Linkat(fd, tmp, fd, name, 0); err != nil {
		return err
	}
	_ = unix.Unlinkat(fd, tmp, 0)
	return nil
}
