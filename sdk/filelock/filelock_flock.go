//go:build unix && !aix

package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// TryLock takes an exclusive lock on f without waiting and reports whether it got it;
// false with a nil error means another open file holds it. f may be open read-only.
// An error is the system's own, for the caller to put in context.
func TryLock(f *os.File) (bool, error) {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EINTR):
			// A signal arrived during the call; nothing was decided.
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		default:
			return false, err
		}
	}
}

// Unlock drops the lock TryLock or Wait took on f. Closing f drops it as well.
func Unlock(f *os.File) error {
	for {
		if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
