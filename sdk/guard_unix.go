//go:build !windows

package sdk

import (
	"os"

	"golang.org/x/sys/unix"
)

// guardStdout keeps file descriptor 1 for the go-plugin handshake only: it saves a
// private duplicate of the real stdout (returned, for Serve to hand to go-plugin) and
// points descriptor 1 itself at stderr. From then on os.Stdout, a stray fmt.Print and
// a C library writing to descriptor 1 all land on stderr and can never corrupt the
// protocol. It returns nil, changing nothing, if descriptor 1 cannot be duplicated.
func guardStdout() *os.File {
	fd, err := unix.Dup(1)
	if err != nil {
		return nil
	}
	unix.CloseOnExec(fd)
	if err := unix.Dup2(2, 1); err != nil {
		_ = unix.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), "/dev/stdout")
}
