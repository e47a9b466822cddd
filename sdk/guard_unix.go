//go:build !windows

package sdk

import (
	"os"

	"golang.org/x/sys/unix"
)

// guardStdout keeps file descriptor 1 for the go-plugin handshake only. os.Stdout is
// pointed at a private duplicate of the real stdout (where go-plugin prints the
// handshake) and descriptor 1 itself is pointed at stderr, so a library or a stray
// fmt.Print writing to descriptor 1 can never corrupt the protocol.
func guardStdout() {
	fd, err := unix.Dup(1)
	if err != nil {
		return
	}
	unix.CloseOnExec(fd)
	if err := unix.Dup2(2, 1); err != nil {
		_ = unix.Close(fd)
		return
	}
	os.Stdout = os.NewFile(uintptr(fd), "/dev/stdout")
}
