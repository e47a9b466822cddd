package sdk

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// The agent starts every plugin with a parent-death signal of SIGKILL, which would end
// the plugin without the clean-up of Serve's exit (killing what the plugin started).
// The SDK replaces it with SIGTERM, which Serve handles. The setting belongs to one
// thread, the one the agent forked; package initialisation runs on that thread (the
// Go runtime keeps the main goroutine there until main starts), whereas Serve may run
// on any, so it is done here.
func init() {
	if startedByAgent {
		_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0)
	}
}
