//go:build linux || darwin

package hashwalk

import (
	"errors"
	"io"

	"golang.org/x/sys/unix"
)

// fdFile reads a raw descriptor as an io.ReadCloser without the runtime's
// poller, which has nothing to offer a regular file.
type fdFile int

func (f fdFile) Read(b []byte) (int, error) {
	for {
		n, err := unix.Read(int(f), b)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

func (f fdFile) Close() error { return unix.Close(int(f)) }
