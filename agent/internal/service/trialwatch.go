package service

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/yuzugo/yuzu/agent/update"
)

// The Windows side of a self-update's rollback (docs/fleet.md "Updating the agent").
// Windows has no ExecStartPre: the version that switches starts a watchdog before it
// exits, its own binary (the previous version, never the new one), detached from the
// service. The watchdog waits for the service to stop, gives the new version its one
// start (update.Guard), starts the service, and waits for the new version to register;
// when it does not in time, or the service stops, the watchdog stops the service,
// lets update.Guard put the previous version back, and starts it. It is written here
// against the SCM interfaces of scm.go, so that it is tested on every system.

// trialTimeout is how long a new version has to register once started; it matches
// the systemd unit's TimeoutStartSec.
const trialTimeout = 180 * time.Second

// WatchTrial runs the watchdog for the tree at root and the service in m. statePath
// is the update state; poll is how often it looks.
func WatchTrial(ctx context.Context, m SCMManager, t update.Tree, statePath string, poll time.Duration, out io.Writer) error {
	s, err := m.Open(Name)
	if err != nil {
		return fmt.Errorf("the service: %w", err)
	}
	defer s.Close()
	say := func(format string, args ...any) { fmt.Fprintf(out, "update watch: "+format+"\n", args...) }
	// The version that switched is exiting: wait for the service to stop.
	if _, err := waitFor(ctx, s, SCMStopped, 2*time.Minute, poll); err != nil {
		return fmt.Errorf("the service did not stop after the switch: %w", err)
	}
	d, err := update.Guard(t, statePath, time.Now())
	if err != nil {
		return err
	}
	say("%s", d)
	if err := s.Start(); err != nil {
		return fmt.Errorf("starting the service on trial: %w", err)
	}
	deadline := time.Now().Add(trialTimeout)
	for time.Now().Before(deadline) {
		st, err := update.LoadState(statePath)
		if err == nil && (st.Trial == nil || st.Trial.Confirmed) {
			if d, err := update.Guard(t, statePath, time.Now()); err == nil {
				say("%s", d)
			}
			return nil
		}
		if q, err := s.Query(); err == nil && q.State == SCMStopped {
			say("the version on trial stopped (exit code %d) before it registered", q.ExitCode)
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
	// Not registered in time, or stopped: back to the version before.
	if q, err := s.Query(); err == nil && q.State != SCMStopped {
		_ = s.Stop()
		if _, err := waitFor(ctx, s, SCMStopped, time.Minute, poll); err != nil {
			return fmt.Errorf("stopping the version on trial: %w", err)
		}
	}
	d, err = update.Guard(t, statePath, time.Now())
	if err != nil {
		return err
	}
	say("%s", d)
	if err := s.Start(); err != nil {
		return fmt.Errorf("starting the previous version: %w", err)
	}
	return nil
}

// waitFor polls the service until it is in state want, at most within.
func waitFor(ctx context.Context, s SCMService, want SCMState, within, poll time.Duration) (SCMStatus, error) {
	deadline := time.Now().Add(within)
	for {
		st, err := s.Query()
		if err != nil {
			return st, err
		}
		if st.State == want {
			return st, nil
		}
		if time.Now().After(deadline) {
			return st, fmt.Errorf("still %s after %s", st.State, within)
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(poll):
		}
	}
}

// RunWatch is `update watch TREE` on Windows: the watchdog (WatchTrial) for the install
// tree at root and the update state at statePath, logging to the file logPath. It
// returns the exit code.
func RunWatch(root, statePath, logPath string) int {
	// A detached process has no console: its log is the file.
	out := io.Writer(io.Discard)
	if f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
		defer f.Close()
		out = f
	}
	fmt.Fprintf(out, "update watch: started %s\n", time.Now().UTC().Format(time.RFC3339))
	m, err := ConnectSCM()
	if err != nil {
		fmt.Fprintln(out, "update watch: the service control manager:", err)
		return exitFail
	}
	t := update.Tree{Root: root, GOOS: "windows"}
	err = WatchTrial(context.Background(), m, t, statePath, time.Second, out)
	_ = m.Close() // before the last line: whoever waits for it may delete the service
	if err != nil {
		fmt.Fprintln(out, "update watch:", err)
		fmt.Fprintln(out, "update watch: done")
		return exitFail
	}
	fmt.Fprintln(out, "update watch: done")
	return exitOK
}
