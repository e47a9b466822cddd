package store

import (
	"context"
	"fmt"
	"os"
	"time"
)

// fileLock is an exclusive advisory lock held on the sibling lock file. It keeps two
// processes sharing a data dir (a running agent and `yuzu-agent exec`) from losing
// each other's updates; within one process the Store's mutex does that job.
type fileLock struct {
	f *os.File
}

// Lock polling bounds: the wait starts short because a holder only keeps the lock for
// one small read-modify-write, and grows so a long wait does not spin.
const (
	lockPollMin = time.Millisecond
	lockPollMax = 50 * time.Millisecond
)

// acquireLock opens (creating it when needed) the lock file at path and waits for an
// exclusive lock on it until ctx ends. Polling a non-blocking lock, rather than a
// blocking call, lets the command's deadline and cancellation end the wait. The lock
// file is opened like the store file: never through a symbolic link, never blocking,
// and only when it is a regular file of ours.
func acquireLock(ctx context.Context, path string) (*fileLock, error) {
	f, err := openLockFile(path)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	wait := lockPollMin
	for {
		ok, err := tryLock(f)
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if ok {
			return &fileLock{f: f}, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, lockPollMax)
	}
}

// release drops the lock. Closing the descriptor would drop it too; unlocking first
// makes the release explicit and immediate.
func (l *fileLock) release() {
	_ = unlock(l.f)
	_ = l.f.Close()
}
