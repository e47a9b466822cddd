package subprocess

import (
	"errors"

	"golang.org/x/sys/unix"
)

// awaitExit blocks until the process has exited without reaping it (WNOWAIT), so its
// pid, and with it the process group id, cannot be reused while Run still kills the
// group. It reports false if it could not wait, leaving the work to exec.Cmd.Wait.
func awaitExit(pid int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil
	}
}
