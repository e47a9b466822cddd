package filelock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// openTwice opens one file through two descriptors, as two processes would; the lock
// belongs to the open file, so they exclude each other within this process too.
func openTwice(t *testing.T) (a, b *os.File) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "lock")
	var err error
	if a, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	// Read-only: a lock must not need write access.
	if b, err = os.Open(path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

// lock takes the lock on f at once or fails the test; it skips where locks are not
// supported.
func lock(t *testing.T, f *os.File) {
	t.Helper()
	ok, err := TryLock(f)
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if !ok || err != nil {
		t.Fatalf("TryLock on a free file = %v, %v", ok, err)
	}
}

func TestTryLockExcludesAnotherDescriptor(t *testing.T) {
	a, b := openTwice(t)
	lock(t, a)
	if ok, err := TryLock(b); ok || err != nil {
		t.Fatalf("TryLock while the other descriptor holds it = %v, %v; want false, nil", ok, err)
	}
	if err := Unlock(a); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if ok, err := TryLock(b); !ok || err != nil {
		t.Fatalf("TryLock after Unlock = %v, %v; want true, nil", ok, err)
	}
	if ok, err := TryLock(a); ok || err != nil {
		t.Fatalf("TryLock on the first descriptor, now the second holds it = %v, %v", ok, err)
	}
	// Closing the holder drops the lock too.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if ok, err := TryLock(a); !ok || err != nil {
		t.Fatalf("TryLock after the holder closed = %v, %v; want true, nil", ok, err)
	}
}

func TestWaitReturnsWhenReleased(t *testing.T) {
	a, b := openTwice(t)
	lock(t, a)
	done := make(chan error, 1)
	go func() { done <- Wait(context.Background(), b) }()
	select {
	case err := <-done:
		t.Fatalf("Wait returned %v while the lock was held", err)
	case <-time.After(100 * time.Millisecond):
	}
	released := time.Now()
	if err := Unlock(a); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Wait after release = %v", err)
		}
		// The poll interval is capped at 50 ms; a second is slack for a busy machine.
		t.Logf("Wait took the lock %s after its release", time.Since(released))
	case <-time.After(time.Second):
		t.Fatal("Wait did not take the lock within 1 s of its release")
	}
	if ok, err := TryLock(a); ok || err != nil {
		t.Fatalf("after Wait, TryLock on the other descriptor = %v, %v; want false, nil", ok, err)
	}
}

func TestWaitEndsWithContext(t *testing.T) {
	a, b := openTwice(t)
	lock(t, a)
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- Wait(ctx, b) }()
		time.Sleep(20 * time.Millisecond)
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Wait after cancel = %v, want context.Canceled", err)
			}
		case <-time.After(time.Second):
			t.Fatal("Wait did not return within 1 s of the cancel")
		}
	})
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		if err := Wait(ctx, b); err != context.DeadlineExceeded {
			t.Fatalf("Wait past its deadline = %v, want ctx.Err() itself", err)
		}
	})
	// Neither wait took the lock.
	if ok, err := TryLock(b); ok || err != nil {
		t.Fatalf("TryLock after the waits gave up = %v, %v; want false, nil", ok, err)
	}
}

// A free lock is taken even when the context has already ended: Wait tries before it
// looks at the context.
func TestWaitTakesFreeLockUnderEndedContext(t *testing.T) {
	a, b := openTwice(t)
	lock(t, a)
	if err := Unlock(a); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Wait(ctx, b); err != nil {
		t.Fatalf("Wait on a free lock under an ended context = %v", err)
	}
	if ok, err := TryLock(a); ok || err != nil {
		t.Fatalf("TryLock while Wait's descriptor holds it = %v, %v", ok, err)
	}
}

// A lock that cannot be tried at all (a closed file) ends Wait with that error, not a
// context error and not a hang.
func TestWaitReportsLockError(t *testing.T) {
	a, _ := openTwice(t)
	lock(t, a)
	if err := Unlock(a); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := Wait(ctx, a)
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on a closed file = %v, want the lock's own error", err)
	}
}
