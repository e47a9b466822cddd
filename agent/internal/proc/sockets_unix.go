//go:build !windows

package proc

import "golang.org/x/sys/unix"

// processAlive says whether a process with that id exists (one of another user
// counts: EPERM).
func processAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || err == unix.EPERM
}
