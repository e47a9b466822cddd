//go:build !linux && !darwin && !windows

package hashwalk

import (
	"io"
	"os"
)

// On other systems the walk only has Lstat: it refuses a link or a
// non-regular entry seen by Lstat and checks that the opened file is the one
// it judged. Nothing stops a swap in an earlier path component.

func openDir(path string) (*os.File, outcome) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, wasUnreadable
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return nil, wasLink
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, wasUnreadable
	}
	if fi2, err := f.Stat(); err != nil || !os.SameFile(fi, fi2) || !fi2.IsDir() {
		f.Close()
		return nil, wasUnreadable
	}
	return f, opened
}

func openFile(path string) (io.ReadCloser, int64, outcome) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, 0, wasUnreadable
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return nil, 0, wasLink
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, wasNotRegular
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, wasUnreadable
	}
	fi2, err := f.Stat()
	if err != nil || !os.SameFile(fi, fi2) || !fi2.Mode().IsRegular() {
		f.Close()
		return nil, 0, wasUnreadable
	}
	return f, fi2.Size(), opened
}

func classifyIrregular(string) outcome { return wasUnreadable }
