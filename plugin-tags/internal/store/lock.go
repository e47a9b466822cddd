package store

import (
	"context"
	"fmt"
	"os"

	"github.com/yuzugo/yuzu/sdk/filelock"
)

// fileLock is an exclusive advisory lock held on the sibling lock file. It keeps two
// processes sharing a data dir (a running agent and `yuzu-agent exec`) from losing
// each other's updates; within one process the Store's mutex does that job. The lock
// belongs to the open file, so two Stores in one process (tests) exclude each other
// just like two processes do.
type fileLock struct {
	f *os.File
}

// acquireLock opens (creating it when needed) the lock file at path and waits for an
// exclusive lock on it until ctx ends. filelock.Wait polls rather than blocks, so the
// command's deadline and cancellation end the wait. The lock file is opened like the
// store file: never through a symbolic link, never blocking, and only when it is a
// regular file of ours.
func acquireLock(ctx context.Context, path string) (*fileLock, error) {
	f, err := openLockFile(path)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := filelock.Wait(ctx, f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &fileLock{f: f}, nil
}

// release drops the lock. Closing the descriptor would drop it too; unlocking first
// makes the release explicit and immediate.
func (l *fileLock) release() {
	_ = filelock.Unlock(l.f)
	_ = l.f.Close()
}
