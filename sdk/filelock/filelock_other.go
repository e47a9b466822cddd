//go:build !(unix && !aix) && !windows

package filelock

import "os"

// TryLock returns ErrUnsupported: this system has no flock (AIX only has fcntl
// locks, which belong to the process rather than to the open file, so two descriptors
// in one process would not exclude each other) or no file locks at all.
func TryLock(*os.File) (bool, error) { return false, ErrUnsupported }

// Unlock returns ErrUnsupported; see TryLock.
func Unlock(*os.File) error { return ErrUnsupported }
