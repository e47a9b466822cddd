//go:build !windows

package update

import "os"

// syncDir flushes a directory's entries to disk (a rename or a new file in it).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
