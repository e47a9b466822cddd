package supervisor

import (
	"errors"
	"fmt"
	"time"
)

// Upgrades under a running agent (docs/agent.md "Upgrades and rollback"). When the
// catalog names another build of a plugin, the keeper starts it beside the child that
// serves (blue-green): the old child takes every command until the new one has
// started, answered its handshake, described itself as the catalog says and been
// configured; then new commands go to the new child and the old one is stopped once
// the commands it holds are done. Nothing in flight is cut and nothing is run twice.
//
// The new build is on probation for Options.Probation (10 minutes): a start that fails
// (or two that run out of time), or three crashes within a minute, roll the plugin back
// to the build the catalog kept as previous. The rollback is decided here, by the
// running agent, never by the new build; it is written to the catalog (the build is
// remembered as rolled back, so `plugins add` and the fleet do not install it again
// unless forced) and this keeper never upgrades to that build again while it runs.
// A rollback has no rollback of its own: if the previous build fails too, the plugin
// meets the ordinary restart budget.

// upgradeState is the keeper's bookkeeping for upgrades; owned by run.
type upgradeState struct {
	// prev is the build to roll back to while bin is on probation; nil when there is
	// none (a first build, or after a rollback).
	prev *Binary
	// until is when bin's probation ends; zero when it is not on probation.
	until time.Time
	// crashes are bin's crashes during its probation, oldest first; slow counts its
	// starts that ran out of time.
	crashes []time.Time
	slow    int
	// candLaunching says a child of bin is starting beside the running child.
	candLaunching bool
	// retiring are children an upgrade replaced (or a removal drains), each with the
	// commands it still holds; each is stopped when it holds none.
	retiring map[*child]int
	// rejected are checksums this keeper rolled back: never upgraded to again.
	rejected map[string]bool
	// removed says the catalog no longer names the plugin: commands are refused and
	// the keeper ends once its children have.
	removed bool
	// Counters for Status.
	upgrades, rollbacks int
	lastRollback        string
}

// The events of upgrades.
type (
	// evUpgrade: the catalog names another build (or the same bytes described
	// differently). prev is the build to roll back to.
	evUpgrade struct {
		bin     Binary
		prev    *Binary
		refused error // the new build may not run at all
		done    chan struct{}
	}
	// evRemove: the catalog no longer names the plugin.
	evRemove struct{ done chan struct{} }
)

// handled is closed by run once the event is handled and the snapshot shows it, so
// that Reload's caller sees the start it caused in Status.
func (e evUpgrade) handled() { close(e.done) }
func (e evRemove) handled()  { close(e.done) }

// Rollback thresholds during probation.
const (
	probationCrashes = 3
	probationWindow  = 60 * time.Second
	probationSlow    = 2
)

// onUpgradeEvent handles the events above.
func (k *keeper) onUpgradeEvent(ev any) {
	switch e := ev.(type) {
	case evUpgrade:
		k.onUpgrade(e)
	case evRemove:
		k.onRemove()
	}
}

func (k *keeper) onUpgrade(e evUpgrade) {
	if len(k.stopping) > 0 || k.up.removed {
		return
	}
	if e.bin.same(k.bin) && e.refused == nil && k.state != StateRefused {
		// The same bytes, described anew (a version learnt, a rejection noted).
		k.bin.Version, k.bin.Build, k.bin.Trust = e.bin.Version, e.bin.Build, e.bin.Trust
		return
	}
	sum := fmt.Sprintf("%x", e.bin.Checksum)
	if k.up.rejected[sum] {
		k.logger().Warn("the catalog names a build this agent rolled back; it is not started again", "build", e.bin.Build)
		return
	}
	if e.refused != nil {
		k.bin, k.up.prev, k.up.until = e.bin, nil, time.Time{}
		k.refuse(e.refused)
		return
	}
	from := k.bin
	k.bin, k.up.prev = e.bin, e.prev
	k.up.until, k.up.crashes, k.up.slow = time.Now().Add(k.sup.opts.Probation), nil, 0
	k.up.upgrades++
	k.logger().Info("plugin build changed in the catalog", "from", from.Build, "to", e.bin.Build, "trust", e.bin.Trust)
	k.startBuild("upgrade to " + e.bin.Build)
}

// startBuild brings the current build up after the catalog changed it: beside the
// running child when there is one (blue-green), else as an ordinary start, at once, so
// that a build that cannot start is known (and rolled back) before a command needs it.
func (k *keeper) startBuild(reason string) {
	if k.child != nil && k.child.why() == "" && k.state == StateRunning {
		if !k.up.candLaunching {
			k.up.candLaunching = true
			k.startChild(k.bin, true)
		}
		return
	}
	if c := k.child; c != nil {
		// Already on its way out (an idle stop, a kill): let it go as retired, so its
		// end is no failure of the new build.
		k.child = nil
		k.up.retiring[c] = 0
		if k.idle.child == c {
			k.idle.child = nil
		}
	}
	if k.launching {
		return // onLaunched sees the start is of an older build and starts this one
	}
	if k.backoff != nil {
		k.backoff.Stop()
	}
	k.restarts, k.failedUntil, k.refused = nil, time.Time{}, nil
	k.launch(reason)
}

// onCandidate handles the start of a build beside the running child.
func (k *keeper) onCandidate(e evLaunched) {
	k.up.candLaunching = false
	if len(k.stopping) > 0 || k.up.removed {
		k.discard(e.c, e.bin, "agent stopped the plugin")
		return
	}
	if !e.bin.same(k.bin) {
		k.discard(e.c, e.bin, "replaced by another build while it started")
		if k.bin.same(k.childBin()) {
			return // rolled back meanwhile: the running child is the build again
		}
		k.startBuild("start the catalog's current build " + k.bin.Build)
		return
	}
	err := e.err
	if err == nil {
		if err = k.checkIdentity(e.c); err != nil {
			e.c.Kill()
		}
	}
	if err != nil {
		if k.onProbation() && e.slow && k.up.slow+1 < probationSlow {
			// Out of time once: the old child keeps serving while it is tried again.
			k.up.slow++
			k.up.candLaunching = true
			k.startChild(k.bin, true)
			return
		}
		if k.probationFailure(err, false) {
			return // rolled back: the old child is of the previous build and serves on
		}
		// No previous build to go back to: the catalog's build is this one, and the
		// running child's build is no longer in it.
		k.logger().Warn("a new build did not start, and the catalog keeps no previous one", "build", k.bin.Build, "error", err)
		k.retireCurrent("its build left the catalog")
		var refused *RefusedError
		if errors.As(err, &refused) {
			k.refuse(err)
		} else {
			k.failure(err.Error())
		}
		return
	}
	old := k.child
	k.child = &child{Child: e.c, bin: e.bin}
	k.retire(old, k.idle.inUse, "replaced by "+e.bin.Build)
	k.idle.inUse, k.idle.took = 0, max(time.Since(k.idle.launched), time.Nanosecond)
	k.watch(k.child)
	go k.ping(k.child)
	k.announce(fmt.Sprintf("upgraded to %s (pid %d)", e.bin.Build, e.c.Pid()))
	k.answer(acquired{c: k.child})
	k.armIdle()
}

// childBin is the build of the running child, zero when none runs.
func (k *keeper) childBin() Binary {
	if k.child == nil {
		return Binary{}
	}
	return k.child.bin
}

// announce pushes a change that keeps the plugin in its state (an upgrade, a
// rollback), with the reason.
func (k *keeper) announce(reason string) {
	k.logger().Info("plugin "+reason, "state", string(k.state))
	k.sup.publish(StateChange{Plugin: k.name, From: k.state, To: k.state, Reason: reason, At: time.Now()})
}

// retire takes a child out of service: it is stopped once the holds commands are
// done (now, when it holds none).
func (k *keeper) retire(c *child, holds int, reason string) {
	if c == nil {
		return
	}
	c.setReason(reason)
	k.up.retiring[c] = holds
	if holds == 0 {
		go c.Stop(k.sup.opts.StopGrace)
	}
}

// retireCurrent retires the running child, if any, and leaves the plugin without one.
func (k *keeper) retireCurrent(reason string) {
	if k.child == nil {
		return
	}
	c := k.child
	k.child = nil
	k.retire(c, k.idle.inUse, reason)
	k.idle.inUse = 0
	k.cancelIdle()
}

// releaseRetiring counts a command done on a retiring child; it reports whether c
// was one.
func (k *keeper) releaseRetiring(c *child) bool {
	n, ok := k.up.retiring[c]
	if !ok {
		return false
	}
	if n > 0 {
		n--
		k.up.retiring[c] = n
		if n == 0 {
			go c.Stop(k.sup.opts.StopGrace)
		}
	}
	return true
}

// stopRetiring stops every retiring child now (the agent stops).
func (k *keeper) stopRetiring() {
	for c, n := range k.up.retiring {
		if n > 0 {
			k.up.retiring[c] = 0
			go c.Stop(k.sup.opts.StopGrace)
		}
	}
}

// onProbation reports whether the current build is on probation.
func (k *keeper) onProbation() bool {
	return k.up.prev != nil && time.Now().Before(k.up.until)
}

// probationFailure handles a failed start of a build on probation: a definite
// failure rolls back at once, a start that ran out of time only the second time (a
// busy machine is no reason to give up on a build). It reports whether it rolled back.
func (k *keeper) probationFailure(err error, slow bool) bool {
	if !k.onProbation() {
		return false
	}
	if slow {
		k.up.slow++
		if k.up.slow < probationSlow {
			return false
		}
	}
	k.rollback(fmt.Sprintf("the new build %s did not start: %v", k.bin.Build, err))
	return true
}

// probationCrash handles a crash of the current build; it reports whether it rolled
// back (the third crash within a minute of a build on probation).
func (k *keeper) probationCrash(c *child, reason string) bool {
	if !k.onProbation() || !c.bin.same(k.bin) {
		return false
	}
	now := time.Now()
	kept := k.up.crashes[:0]
	for _, t := range k.up.crashes {
		if now.Sub(t) < probationWindow {
			kept = append(kept, t)
		}
	}
	k.up.crashes = append(kept, now)
	if len(k.up.crashes) < probationCrashes {
		return false
	}
	k.rollback(fmt.Sprintf("the new build %s crashed %d times within %s, last: %s", k.bin.Build, len(k.up.crashes), Seconds(probationWindow), reason))
	return true
}

// rollback goes back to the previous build: in memory at once (the running child, if
// it is of that build, simply keeps serving; else a child of it starts), and in the
// catalog through Options.OnRollback, in the background so that a slow disk never
// stalls the plugin. The failed build is never upgraded to again by this keeper.
func (k *keeper) rollback(reason string) {
	failed, back := k.bin, *k.up.prev
	if k.up.rejected == nil {
		k.up.rejected = map[string]bool{}
	}
	k.up.rejected[fmt.Sprintf("%x", failed.Checksum)] = true
	k.bin, k.up.prev, k.up.until = back, nil, time.Time{}
	k.up.rollbacks++
	k.up.lastRollback = reason
	k.lastErr = "rolled back from " + failed.Build + ": " + reason
	k.logger().Error("plugin rolled back to its previous build", "from", failed.Build, "to", back.Build, "reason", reason)
	k.sup.rolledBack(k.name, failed, back, reason)
	if k.child == nil || !k.child.bin.same(back) {
		k.retireCurrent("rolled back to " + back.Build)
		k.launch("roll back to " + back.Build)
	}
	k.announce("rolled back to " + back.Build + ": " + reason)
}

// refuse makes the plugin refused after the catalog stopped trusting its build: the
// running child is retired (its commands finish), new commands get the refusal.
func (k *keeper) refuse(err error) {
	k.refused, k.lastErr = err, err.Error()
	k.retireCurrent("its build is no longer trusted")
	if k.backoff != nil {
		k.backoff.Stop()
	}
	// A start still under way ends in onLaunched, which stops what it brings.
	k.transition(StateRefused, err.Error())
	k.answer(acquired{err: err})
}

// onRemove drains a plugin the catalog no longer names: new commands are refused as
// for an unknown plugin, the running child finishes what it holds and stops.
func (k *keeper) onRemove() {
	k.up.removed = true
	if k.backoff != nil {
		k.backoff.Stop()
	}
	k.answer(acquired{err: &unknownPluginError{name: k.name}})
	k.retireCurrent("removed from the catalog")
	if !k.launching {
		k.transition(StateStopped, "removed from the catalog")
	}
	k.stopping = append(k.stopping, make(chan struct{})) // ends run once all is gone
}
