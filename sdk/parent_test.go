package sdk

import (
	"sync/atomic"
	"testing"
	"time"
)

// The parent-pid watch (the only one on macOS) fires once the parent changes, and
// only then.
func TestWatchPPID(t *testing.T) {
	var ppid atomic.Int64
	ppid.Store(4242)
	fired := make(chan struct{}, 2)
	watchPPID(func() int { return int(ppid.Load()) }, 4242, 5*time.Millisecond, func() { fired <- struct{}{} })
	select {
	case <-fired:
		t.Fatal("fired while the parent was alive")
	case <-time.After(50 * time.Millisecond):
	}
	ppid.Store(1) // re-parented to init: the agent is gone
	select {
	case <-fired:
	case <-time.After(5 * time.Second):
		t.Fatal("did not fire after the parent changed")
	}
	select {
	case <-fired:
		t.Fatal("fired twice")
	case <-time.After(30 * time.Millisecond):
	}

	// Started after the parent is already gone: fires at once; started by init:
	// nothing to watch.
	now := make(chan struct{}, 1)
	watchPPID(func() int { return 1 }, 4242, time.Hour, func() { now <- struct{}{} })
	select {
	case <-now:
	default:
		t.Error("did not fire at once for a parent already gone")
	}
	watchPPID(func() int { return 1 }, 1, time.Millisecond, func() { t.Error("fired for init as the parent") })
	time.Sleep(20 * time.Millisecond)
}
