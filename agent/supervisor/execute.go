package supervisor

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/yuzugo/yuzu/sdk"
)

// exitWait is how long a command whose stream broke waits to see its child exit
// before deciding the child is alive. A plugin that dies mid-command breaks the stream
// a moment before the agent reaps the process, and on a loaded machine that moment
// can be long: waiting tells a crash (answered with how the child ended) from a child
// that is still running but broke the protocol (killed, since it cannot be trusted).
const exitWait = 2 * time.Second

// acquireBy is acquire bounded by a command's deadline (none when zero): a plugin that
// is slow to start, or waiting out a restart, must not leave the command unanswered
// past it.
func (k *keeper) acquireBy(ctx context.Context, deadline time.Time, timeout time.Duration) (*child, error) {
	if deadline.IsZero() {
		return k.acquire(ctx)
	}
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	c, err := k.acquire(wctx)
	if err != nil && ctx.Err() == nil && wctx.Err() != nil {
		st := k.status()
		what := fmt.Sprintf("plugin %s to start (%s", k.name, st.State)
		if st.LastError != "" {
			what += ": " + st.LastError
		}
		return nil, &WaitTimeoutError{Plugin: k.name, Deadline: timeout, For: what + ")"}
	}
	return c, err
}

// execute runs one command on a running child, enforcing its deadline: past the
// deadline plus the grace period the child is killed. A command cancelled by its
// caller gets the same grace to stop before the child is killed.
func (k *keeper) execute(ctx context.Context, req Request, onRows func([]string) error) (sdk.Result, error) {
	start := time.Now()
	deadline := req.Deadline
	if deadline.IsZero() && req.Timeout > 0 {
		deadline = start.Add(req.Timeout)
	}
	timeout := req.Timeout
	if timeout <= 0 && !deadline.IsZero() {
		timeout = deadline.Sub(start)
	}
	if req.ParkAfter && k.isIdle() {
		// Deferred first, so that it runs after the release below.
		defer k.park("the agent's own " + req.Action + " is done; starts on its next command")
	}
	c, err := k.acquireBy(ctx, deadline, timeout)
	if err != nil {
		return sdk.Result{}, err
	}
	defer k.release(c) // the idle period starts when the last command is done
	onRows = k.checkedRows(c.Manifest(), req.Action, onRows)
	grace := k.sup.opts.Grace
	var timedOut atomic.Bool
	if !deadline.IsZero() {
		t := time.AfterFunc(time.Until(deadline)+grace, func() {
			timedOut.Store(true)
			c.setReason("stopped after another command timed out")
			k.kill(c, fmt.Sprintf("command %s passed its deadline plus %s grace", commandLabel(req), Seconds(grace)))
		})
		defer t.Stop()
	}
	finished := make(chan struct{})
	defer close(finished)
	stopCancelWatch := context.AfterFunc(ctx, func() {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-finished:
		case <-t.C:
			c.setReason("stopped after another command was cancelled and did not stop")
			k.kill(c, fmt.Sprintf("command %s did not stop within %s of its cancellation", commandLabel(req), Seconds(grace)))
		}
	})
	defer stopCancelWatch()

	cmd := req.Command
	cmd.Deadline = deadline
	res, err := c.Execute(ctx, cmd, onRows)
	if err == nil {
		return res, nil
	}
	if timedOut.Load() {
		return sdk.Result{}, &TimeoutError{Plugin: k.name, Deadline: timeout}
	}
	if ctx.Err() != nil {
		return sdk.Result{}, ctx.Err()
	}
	// The stream broke: wait for the process to be seen gone, then say how it ended.
	select {
	case <-c.Exited():
		detail := c.why()
		if detail == "" {
			detail = k.name + " exited during the command (" + c.ExitStatus() + ")"
		}
		if limit := c.memoryKilled(); limit > 0 {
			return sdk.Result{}, &CrashedError{Plugin: k.name, Detail: detail, MemoryLimit: limit}
		}
		return sdk.Result{}, &CrashedError{Plugin: k.name, Detail: detail}
	case <-time.After(exitWait):
	}
	// Still alive but the stream failed: the protocol is broken; do not trust the child.
	k.kill(c, "stream failed: "+err.Error())
	return sdk.Result{}, &CrashedError{Plugin: k.name, Detail: "lost the command stream: " + err.Error()}
}

// commandLabel names a command in a log line: its action, and its id when it has one.
func commandLabel(req Request) string {
	if req.ID == "" {
		return req.Action
	}
	return fmt.Sprintf("%s (id %q)", req.Action, req.ID)
}
