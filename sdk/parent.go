package sdk

import (
	"os"
	"time"
)

// pollParent calls gone once the parent pid is no longer ppid. A ppid of 1 means the
// plugin was started by init or its parent already died: there is nothing to watch.
// It is the only parent watch on macOS, which has no parent-death signal.
func pollParent(ppid int, every time.Duration, gone func()) {
	watchPPID(os.Getppid, ppid, every, gone)
}

// watchPPID is pollParent with the parent-pid lookup passed in, so that tests can
// play the agent's death on any OS.
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
