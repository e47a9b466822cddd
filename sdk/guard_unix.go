//go:build !windows

package sdk

import (
	"os"

	"golang.org/x/sys/unix"
)

// guardStdout keeps file descriptor 1 for the go-plugin handshake only: it saves a
// private duplicate of the real stdout (returned, for Serve to hand to go-plugin) and
// points descriptor 1 itself at a pipe whose lines become log lines on stderr (see
// relayStray). From then on os.Stdout, a stray fmt.Print and a C library writing to
// descriptor 1 all end up in the agent's log, and can never corrupt the protocol. It
// returns nil, changing nothing, if the descriptors cannot be set up.
func guardStdout() *os.File {
	saved, err := unix.Dup(1)
	if err != nil {
		return nil
	}
	unix.CloseOnExec(saved)
	var p [2]int
	// Pipe then CloseOnExec (macOS has no pipe2); this runs during package
	// initialisation, before anything could start a process in between.
	if err := unix.Pipe(p[:]); err != nil {
		_ = unix.Close(saved)
		return nil
	}
	unix.CloseOnExec(p[0])
	unix.CloseOnExec(p[1])
	if err := unix.Dup2(p[1], 1); err != nil {
		_ = unix.Close(saved)
		_ = unix.Close(p[0])
		_ = unix.Close(p[1])
		return nil
	}
	_ = unix.Close(p[1])
	go relayStray(os.NewFile(uintptr(p[0]), "stray-stdout"), os.Stderr)
	return os.NewFile(uintptr(saved), "/dev/stdout")
}
