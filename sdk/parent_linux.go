package sdk

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// watchParent makes the plugin exit when the agent that started it dies. The kernel's
// parent-death signal covers a clean kill; the poll of the parent pid covers the case
// where the signal was armed after the parent had already gone, and a subreaper
// adopting the child.
func watchParent(every time.Duration, gone func()) {
	ppid := os.Getppid()
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0)
	pollParent(ppid, every, gone)
}
