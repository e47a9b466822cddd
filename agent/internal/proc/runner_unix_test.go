//go:build unix

package proc

import (
	"context"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Wait returns only once everything after the exit is done: the launcher has forgotten
// the child (onEnd) by then. Before, Wait could return first, and the supervisor's
// Close, racing the cleanup, took the exited child for a live one and read the whole
// process table for orphans on every one-shot exec.
func TestRunnerWaitReturnsAfterCleanup(t *testing.T) {
	var ended atomic.Bool
	r := &Runner{
		Cmd:   exec.Command("sh", "-c", "exit 3"),
		Path:  "sh",
		Image: &Image{},
		Log:   hclog.NewNullLogger(),
		OnEnd: func() {
			time.Sleep(50 * time.Millisecond) // a slow cleanup must still come first
			ended.Store(true)
		},
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !ended.Load() {
		t.Fatal("Wait returned before the cleanup after the exit had run")
	}
	if got := r.ExitStatus(); got == "" {
		t.Fatal("no exit status recorded")
	}
	// Kill after the exit must not signal anything: the pid may be someone else's.
	if err := r.Kill(context.Background()); err != nil {
		t.Fatalf("Kill after exit: %v", err)
	}
}
