package sdk

import (
	"os"
	"time"
)

// watchParent makes the plugin exit when the agent that started it dies: it calls gone
// once the parent pid changes, which it does when the process is re-parented. It is
// the only parent watch on macOS and Windows; on Linux the kernel's parent-death
// signal (parent_linux.go) ends a plugin sooner, and this poll covers a signal armed
// after the parent had already gone and a subreaper adopting the child.
func watchParent(every time.Duration, gone func()) {
	watchPPID(os.Getppid, os.Getppid(), every, gone)
}

// watchPPID calls gone once getppid no longer answers ppid. A ppid of 1 means the
// plugin was started by init or its parent already died: there is nothing to watch.
// The lookup is passed in so that tests can play the agent's death on any OS.
func watchPPID(getppid func() int, ppid int, every time.Duration, gone func()) {
	if ppid <= 1 {
		return
	}
	if getppid() != ppid {
		gone()
		return
	}
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for range t.C {
			if getppid() != ppid {
				gone()
				return
			}
		}
	}()
}
