package session

import (
	"context"
	"errors"
	"time"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/agent/update"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// The agent's own updates (docs/fleet.md "Updating the agent"): the session says when
// to check, the Updater (agent/update) does the rest, and a switch ends the session
// so that the service manager restarts the agent on the new version.

// ErrUpdated ends Run when the agent switched to a new version of itself: it stopped
// as at SIGTERM and must be started again (by its service manager) to run it.
var ErrUpdated = errors.New("switched to a new agent version; stopping to be restarted on it")

// Update checks: every Interval (6 h), a tenth of it either way at random; the first
// of the process within firstCheckMax of its first registration; after a reconnect
// after a random wait of up to Splay (10 min), so that a fleet reconnecting to a
// restarted server does not check, and download, all at once.
const (
	defaultUpdateInterval = 6 * time.Hour
	defaultUpdateSplay    = 10 * time.Minute
	firstCheckMax         = 30 * time.Second
	// idleWait bounds how long a switch that is not mandatory waits for the agent
	// to have no command in flight before it stops.
	idleWait = 10 * time.Minute
)

// UpdateStatus is the updater's status, nil without one.
func (s *Session) UpdateStatus() *update.Status {
	if s.o.Update == nil {
		return nil
	}
	st := s.o.Update.Status()
	return &st
}

// nextUpdateCheck is when the first check on this connection is due: on the first
// connection of the process within firstCheckMax (or the splay, if shorter); on a
// reconnect after a random wait of up to the splay (a restarted server may have a new
// build, but the fleet must not ask all at once), or at the periodic check if that
// comes first.
func (s *Session) nextUpdateCheck(first bool) time.Time {
	now := time.Now()
	s.enrollMu.Lock()
	defer s.enrollMu.Unlock()
	bound := s.o.UpdateSplay
	if first {
		bound = min(firstCheckMax, bound)
	}
	splayed := now.Add(time.Duration(s.o.Rand(int64(bound) + 1)))
	// A periodic check that came due while the agent was disconnected waits for the
	// splay too: the whole fleet was disconnected with it.
	if s.updateDue.Before(now) || splayed.Before(s.updateDue) {
		s.updateDue = splayed
	}
	return s.updateDue
}

// updates runs the update checks while the connection over client lasts. A switch
// closes restart (after waiting for the agent to be idle, unless the server said
// mandatory).
func (s *Session) updates(ctx context.Context, client agentv1.AgentServiceClient, first bool, restart chan<- struct{}) {
	u := s.o.Update
	if u == nil || s.o.UpdateInterval <= 0 {
		return
	}
	due := s.nextUpdateCheck(first)
	for {
		u.SetNext(due)
		t := time.NewTimer(time.Until(due))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		res, err := u.Check(ctx, client)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.log.Warn("agent update check failed; trying again at the next check", "error", rows.Printable(err.Error()))
			s.o.Metrics.UpdateCheck(false)
		} else {
			s.o.Metrics.UpdateCheck(true)
		}
		jitter := time.Duration(s.o.Rand(int64(s.o.UpdateInterval/5)+1)) - s.o.UpdateInterval/10
		s.enrollMu.Lock()
		s.updateDue = time.Now().Add(s.o.UpdateInterval + jitter)
		due = s.updateDue
		s.enrollMu.Unlock()
		if res.Switched == "" {
			continue
		}
		if !res.Mandatory {
			s.waitIdle(ctx, idleWait)
		}
		close(restart)
		return
	}
}

// waitIdle waits until no command is in flight or waiting, at most d.
func (s *Session) waitIdle(ctx context.Context, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		busy := len(s.inflight) > 0 || s.waiting > 0
		s.mu.Unlock()
		if !busy {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}
