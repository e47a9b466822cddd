package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// TryLock takes an exclusive lock on f without waiting and reports whether it got it;
// false with a nil error means another handle holds it. f may be open read-only. The
// lock covers the first byte only: every locker uses the same range, so one byte is
// enough, and a mandatory lock on that byte keeps no reader of the rest out. An error
// is the system's own, for the caller to put in context.
func TryLock(f *os.File) (bool, error) {
	var ol windows.Overlapped
	err := windows.LockFileEx(windows.Handle(f.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION), errors.Is(err, windows.ERROR_IO_PENDING):
		// ERROR_IO_PENDING: a handle opened for overlapped I/O reports a lock it
		// could not take at once this way.
		return false, nil
	default:
		return false, err
	}
}

// Unlock drops the lock TryLock or Wait took on f. Closing f drops it as well.
func Unlock(f *os.File) error {
	var ol windows.Overlapped
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
