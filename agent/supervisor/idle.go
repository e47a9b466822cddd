package supervisor

import (
	"context"
	"time"

	"github.com/yuzugo/yuzu/sdk/host"
)

// Lazy start and idle stop (docs/agent.md "Lazy start and idle stop"): a plugin's
// child starts when a command needs it, and a plugin with an idle stop has its child
// stopped once it has gone that long with no command in flight. The stop is the agent's
// own doing, no failure: it leaves the plugin idle, counts in IdleStops and not against
// the restart budget, and the next command starts a child again. Health pings talk to
// the child directly, never through acquire, so they neither keep a child from its
// idle stop nor start one.

// StateIdle is a plugin whose child the agent stopped because it had no command for
// its idle period, or stopped right after learning its manifest (Prime); its last
// manifest stays known, and the next command starts it.
const StateIdle State = "idle"

// Ready reports whether a plugin in this state takes commands without a failure to
// wait out: running, or stopped or idle until a command starts it.
func (s State) Ready() bool {
	return s == StateRunning || s == StateIdle || s == StateStopped
}

// idleState is the keeper's bookkeeping for lazy start and idle stop; owned by run.
type idleState struct {
	after    time.Duration // the plugin's idle stop; 0: never
	inUse    int           // acquires of the current child not yet released
	gen      int           // bumped whenever a pending idle timer must be ignored
	timer    *time.Timer
	child    *child // the child being stopped for idleness, until it has exited
	stops    int
	launched time.Time     // when the start under way began
	took     time.Duration // how long the last successful start took
}

// The events of lazy start and idle stop.
type (
	// evRelease: a command (or Describe) is done with c.
	evRelease struct{ c *child }
	// evIdle: the idle timer of generation gen has fired.
	evIdle struct{ gen int }
	// evPark: stop the child now if it is idle and the plugin has an idle stop
	// (Prime, once the manifest is known; Request.ParkAfter), for the reason given.
	evPark struct {
		reason string
		done   chan struct{}
	}
)

// onIdleEvent handles the events above; it reports whether ev was one of them.
func (k *keeper) onIdleEvent(ev any) bool {
	switch e := ev.(type) {
	case evRelease:
		if e.c == k.child && k.idle.inUse > 0 {
			k.idle.inUse--
			k.armIdle()
		} else {
			k.releaseRetiring(e.c)
		}
	case evIdle:
		if e.gen == k.idle.gen {
			k.stopIdle("no command for " + Seconds(k.idle.after))
		}
	case evPark:
		k.stopIdle(e.reason)
		close(e.done)
	default:
		return false
	}
	return true
}

// use counts one more holder of the current child and cancels a pending idle stop.
func (k *keeper) use() {
	k.idle.inUse++
	k.cancelIdle()
}

func (k *keeper) cancelIdle() {
	k.idle.gen++
	if k.idle.timer != nil {
		k.idle.timer.Stop()
		k.idle.timer = nil
	}
}

// armIdle starts the idle period once the running child has no holder left.
func (k *keeper) armIdle() {
	if k.idle.after <= 0 || k.idle.inUse > 0 || k.state != StateRunning || k.child == nil {
		return
	}
	k.cancelIdle()
	gen := k.idle.gen
	k.idle.timer = time.AfterFunc(k.idle.after, func() { k.send(evIdle{gen: gen}) })
}

// stopIdle stops the running child, gracefully, if it may go: the plugin has an idle
// stop, nothing holds the child, and nobody else is ending it.
func (k *keeper) stopIdle(reason string) {
	c := k.child
	if k.idle.after <= 0 || k.idle.inUse > 0 || k.state != StateRunning || c == nil || len(k.stopping) > 0 || c.why() != "" {
		return
	}
	k.cancelIdle()
	c.setReason("idle stop: " + reason)
	k.idle.child = c
	k.idle.stops++
	k.transition(StateIdle, reason)
	go c.Stop(k.sup.opts.StopGrace)
}

// idleExited handles the exit of a child stopped for idleness, once run has taken it
// off k.child; it reports whether c was one. A command that arrived during the stop
// gets a new child now.
func (k *keeper) idleExited(c *child) bool {
	if k.idle.child != c {
		return false
	}
	k.idle.child = nil
	if len(k.waiters) > 0 {
		k.launch("a command needs it (it was idle)")
	}
	return true
}

// acquireIdle is onAcquire for an idle plugin: a command waits for the child being
// stopped to be gone, then for a new one.
func (k *keeper) acquireIdle(reply chan<- acquired) {
	k.waiters = append(k.waiters, reply)
	if k.child == nil && !k.launching {
		k.launch("a command needs it (it was idle)")
	}
}

// release tells run a holder is done with c; an idle period may begin.
func (k *keeper) release(c *child) {
	if c != nil {
		k.send(evRelease{c: c})
	}
}

// known returns the manifest of the plugin's last child while the plugin is running
// or idle, so that the fleet session (pluginInfos) and describe do not start an idle
// plugin to learn what it said at its last start: the same verified bytes say the
// same.
func (k *keeper) known() (host.Manifest, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.snap.State != StateRunning && k.snap.State != StateIdle {
		return host.Manifest{}, false
	}
	return k.snapManifest, k.snapManifest.Name != ""
}

// isIdle reports whether the plugin is idle now (Request.ParkAfter).
func (k *keeper) isIdle() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.snap.State == StateIdle
}

// park stops the child now if the plugin has an idle stop and nothing holds it.
func (k *keeper) park(reason string) {
	done := make(chan struct{})
	if !k.send(evPark{reason: reason, done: done}) {
		return
	}
	select {
	case <-done:
	case <-k.quit:
	}
}

// Prime starts every plugin that may run, so that its manifest is known, and then
// stops again at once the child of each plugin that has an idle stop (Options.IdleStop):
// those start on their first command, the others stay running as after Start. `run`
// calls it so that its registration can list every plugin's actions while no child
// runs.
func (s *Supervisor) Prime(ctx context.Context) {
	s.Start(ctx)
	for _, k := range s.list() {
		k.park("manifest learnt at start; starts on its first command")
	}
}
