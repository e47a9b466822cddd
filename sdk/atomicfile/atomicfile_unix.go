//go:build !windows

package atomicfile

import (
	"io/fs"
	"os"
	"syscall"
)

func openExclusive(name string, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
}

func replace(tmp, target string) error { return os.Rename(tmp, target) }

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
