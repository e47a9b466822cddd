package sdk

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/sdk/internal/wire"
)

// The agent starts every plugin with a parent-death signal of SIGKILL, which would end
// the plugin without the clean-up of Serve's exit (killing what the plugin started).
// The SDK replaces it with SIGTERM, which Serve handles. The setting belongs to one
// thread, the one the agent forked; package initialisation runs on that thread (the
// Go runtime keeps the main goroutine there until main starts), whereas Serve may run
// on any, so it is done here.
func init() {
	if os.Getenv(wire.Handshake.MagicCookieKey) == wire.Handshake.MagicCookieValue {
		_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0)
	}
}

// watchParent makes the plugin exit when the agent that started it dies. The kernel's
// parent-death signal (set at initialisation) covers a clean kill; the poll of the
// parent pid covers the case where the signal was armed after the parent had already
// gone, and a subreaper adopting the child.
func watchParent(every time.Duration, gone func()) {
	pollParent(os.Getppid(), every, gone)
}
