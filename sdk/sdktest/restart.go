package sdktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
)

// Restart is what KillMidCommand saw: each killed command with the restart the agent
// would apply after it, then the command once more on the last child.
type Restart struct {
	// Policy is the agent's restart policy, which set the backoffs below.
	Policy host.RestartPolicy
	// Kills are the killed commands, in order.
	Kills []Kill
	// Failed is set when the kills spent the policy's budget: the agent would refuse
	// the plugin's commands for Policy.FailedFor, and Final is empty.
	Failed bool
	// Final is the command run to its end on the child started after the last kill.
	Final Outcome
	// FinalPID is that child's process id.
	FinalPID int
}

// Kill is one child killed in the middle of a command.
type Kill struct {
	PID int
	// Before is what the command had produced when its child was killed: the rows and
	// progress that arrived, and no result.
	Before Outcome
	// Err is how the command ended for the host (the stream broke, or
	// host.ErrNoResult); the agent answers such a command "plugin crashed".
	Err error
	// Backoff is the wait before the next start, by Policy.Backoff for this failure.
	Backoff time.Duration
}

// KillMidCommand shows locally what the agent does when a plugin dies in the middle of
// a command (exec runs one command and exits, so it never shows a restart). It starts
// the plugin binary at path as a real child (as Start does), runs cmd, and kills the
// child with SIGKILL as soon as the command's first row or progress report arrives;
// then it waits the backoff host.DefaultRestartPolicy gives for that failure, starts a
// new child, and does the same again, kills times in all. Last it runs cmd to its end
// on a new child. The failures count as within the policy's window (they come seconds
// apart): past its budget the report says Failed, as the agent would.
//
// cmd must write a row or report progress before it ends; a command that ends first
// fails the test, since there was nothing to kill it in.
func KillMidCommand(t testing.TB, path string, cfg sdk.Config, cmd host.Command, kills int) Restart {
	t.Helper()
	r := Restart{Policy: host.DefaultRestartPolicy()}
	for n := 1; n <= kills; n++ {
		h := Start(t, path, cfg)
		k := h.killMid(cmd)
		h.Client.Kill() // reaps the killed child
		delay, ok := r.Policy.Backoff(n)
		k.Backoff = delay
		r.Kills = append(r.Kills, k)
		if !ok {
			r.Failed = true
			return r
		}
		time.Sleep(delay) // the backoff itself is what is shown, not a guess at timing
	}
	h := Start(t, path, cfg)
	r.FinalPID = h.Client.ReattachConfig().Pid
	o, err := h.Execute(context.Background(), cmd)
	if err != nil {
		t.Fatalf("sdktest: %s on the restarted child: %v", cmd.Action, err)
	}
	r.Final = o
	return r
}

// killMid runs cmd and kills the child once the command has shown it is running.
func (h *Harness) killMid(cmd host.Command) Kill {
	h.t.Helper()
	k := Kill{PID: h.Client.ReattachConfig().Pid}
	var once sync.Once
	var killErr error
	kill := func() {
		once.Do(func() {
			p, err := os.FindProcess(k.PID)
			if err == nil {
				err = p.Kill()
			}
			killErr = err
		})
	}
	cmd.OnProgress = func(done, total uint64, unit string) {
		k.Before.Progress = append(k.Before.Progress, Progress{Done: done, Total: total, Unit: unit})
		kill()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := h.client.Execute(ctx, cmd, func(rows []string) error {
		k.Before.Rows = append(k.Before.Rows, rows...)
		kill()
		return nil
	})
	switch {
	case killErr != nil:
		h.t.Fatalf("sdktest: kill plugin child %d: %v", k.PID, killErr)
	case err == nil:
		h.t.Fatalf("sdktest: %s ended (%s) before the child could be killed: it must write a row or report progress first", cmd.Action, host.Trailer(res))
	case errors.Is(err, context.DeadlineExceeded):
		h.t.Fatalf("sdktest: %s: no row, progress or end within 2 minutes", cmd.Action)
	}
	k.Err = err
	return k
}

// String describes the restarts as the agent's log would: one line per kill, then
// the final command.
func (r Restart) String() string {
	var s string
	for i, k := range r.Kills {
		s += fmt.Sprintf("kill %d: child %d killed after %d rows (%v)", i+1, k.PID, len(k.Before.Rows), k.Err)
		if r.Failed && i == len(r.Kills)-1 {
			s += fmt.Sprintf("; budget of %d restarts within %s spent: failed for %s\n", r.Policy.Budget, r.Policy.Window, r.Policy.FailedFor)
			return s
		}
		s += fmt.Sprintf("; restart after %s backoff\n", k.Backoff)
	}
	return s + fmt.Sprintf("final: child %d: %d rows, %s", r.FinalPID, len(r.Final.Rows), host.Trailer(r.Final.Result))
}
