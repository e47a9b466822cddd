package main

import "time"

// stopSelf hangs: Windows has no SIGSTOP, so the process only stops answering.
func stopSelf() {
	for {
		time.Sleep(time.Hour)
	}
}
