package sdk

import (
	"os"
	"time"
)

// pollParent calls gone once the parent pid is no longer ppid. A ppid of 1 means the
// plugin was started by init or its parent already died: there is nothing to watch.
func pollParent(ppid int, every time.Duration, gone func()) {
	if ppid <= 1 {
		return
	}
	if os.Getppid() != ppid {
		gone()
		return
	}
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for range t.C {
			if os.Getppid() != ppid {
				gone()
				return
			}
		}
	}()
}
