// Package filelock takes an exclusive advisory lock on an open file, shared by every
// process that locks the same file the same way: a running agent and a
// `yuzu-agent exec` beside it, or two plugins writing into one data directory.
//
// The lock belongs to the open file (flock on Unix, LockFileEx on Windows), not to the
// process: two descriptors opened separately on one file exclude each other even in
// one process, and closing the descriptor drops the lock. There is no blocking
// acquire; Wait polls TryLock, so a command's deadline or cancellation can end the
// wait, which a blocking system call would not notice.
package filelock

import (
	"context"
	"errors"
	"os"
	"time"
)

// ErrUnsupported is returned on systems without a file lock this package knows.
var ErrUnsupported = errors.New("file locks are not supported on this system")

// Polling bounds of Wait: a holder usually keeps the lock for one short
// read-modify-write, so the first retries come quickly; the interval then grows so a
// long wait does not spin.
const (
	pollMin = time.Millisecond
	pollMax = 50 * time.Millisecond
)

// Wait takes the lock on f, retrying while another holder has it, until ctx ends. It
// tries once before looking at ctx, so a free lock is taken even under an ended
// context. It returns nil with the lock held, ctx.Err() when the context ended first,
// or the error TryLock met.
func Wait(ctx context.Context, f *os.File) error {
	wait := pollMin
	var t *time.Timer
	for {
		ok, err := TryLock(f)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if t == nil {
			t = time.NewTimer(wait)
			defer t.Stop()
		} else {
			t.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, pollMax)
	}
}
