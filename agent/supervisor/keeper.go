package supervisor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/internal/limits"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
)

// State is where a plugin is in its life cycle.
type State string

// The states of a plugin.
const (
	StateStopped  State = "stopped"  // not started yet, or stopped by the agent
	StateStarting State = "starting" // verify, start, handshake, Describe and Configure under way
	StateRunning  State = "running"  // child up and answering
	StateBackoff  State = "backoff"  // child died or failed to start; restart scheduled
	StateFailed   State = "failed"   // restart budget spent; commands refused until the failed period ends
	StateRefused  State = "refused"  // the binary may not run (checksum, ownership, permissions, manifest)
)

// transitions is every state change the supervisor makes; anything else is a bug,
// which transition refuses and logs. Refused is final: a binary that may not run stays
// refused until the agent looks at the plugin dir again.
var transitions = map[State][]State{
	StateStopped:  {StateStarting},
	StateStarting: {StateRunning, StateBackoff, StateFailed, StateRefused, StateStopped},
	StateRunning:  {StateBackoff, StateFailed, StateStopped, StateIdle},
	StateIdle:     {StateStarting, StateStopped},
	StateBackoff:  {StateStarting, StateStopped},
	StateFailed:   {StateStarting, StateStopped},
	StateRefused:  nil,
}

// Allowed reports whether the supervisor may move a plugin from one state to another.
func Allowed(from, to State) bool { return slices.Contains(transitions[from], to) }

// StateChange is one transition of one plugin, as pushed to subscribers.
type StateChange struct {
	Plugin string
	From   State
	To     State
	Reason string
	At     time.Time
}

// errShuttingDown answers commands that arrive while the agent stops.
var errShuttingDown = errors.New("agent is shutting down")

// keeper keeps one plugin alive. A single goroutine (run) owns the plugin's state and
// reacts to events: a command needing a child, a start finishing, a child exiting, a
// restart timer, a stop. Everything else talks to it through events, so no state is
// shared between goroutines except the snapshot Status reads.
type keeper struct {
	sup    *Supervisor
	bin    Binary
	events chan any
	quit   chan struct{} // closed when run returns

	// Owned by run.
	state       State
	refused     error
	child       *child
	launching   bool
	waiters     []chan<- acquired
	restarts    []time.Time // starts after a failure within the window, oldest first
	total       int
	lastErr     string
	failedUntil time.Time
	backoff     *time.Timer
	stopping    []chan struct{} // Close calls waiting for the child to go
	snapChild   *child          // the child whose manifest snap.Version and snap.Actions hold
	lastBox     *limits.Box     // the current or last child's box; as snap
	idle        idleState       // lazy start and idle stop (idle.go)

	mu   sync.Mutex
	snap Status // written by run only, under mu; run may read it without mu
	// snapManifest is snapChild's whole manifest, under mu like snap: what Describe
	// answers while no child runs.
	snapManifest host.Manifest
}

type acquired struct {
	c   *child
	err error
}

// The events run reacts to.
type (
	evAcquire  struct{ reply chan<- acquired }
	evLaunched struct {
		c   Child
		err error
		// slow says the start failed because it ran out of StartTimeout.
		slow bool
	}
	evExited      struct{ c *child }
	evBackoffDone struct{}
	evStop        struct{ done chan struct{} }
)

func newKeeper(s *Supervisor, b Binary, refused error) *keeper {
	k := &keeper{sup: s, bin: b, events: make(chan any, 16), quit: make(chan struct{}), state: StateStopped}
	k.idle.after = s.opts.idleStopFor(b.Name)
	if refused != nil {
		k.state, k.refused, k.lastErr = StateRefused, refused, refused.Error()
	}
	k.snapshot()
	go k.run()
	return k
}

func (k *keeper) logger() hclog.Logger { return k.sup.log.With("plugin", k.bin.Name) }

// send delivers an event unless the keeper has stopped.
func (k *keeper) send(ev any) bool {
	select {
	case k.events <- ev:
		return true
	case <-k.quit:
		return false
	}
}

func (k *keeper) run() {
	defer close(k.quit)
	for ev := range k.events {
		switch e := ev.(type) {
		case evAcquire:
			k.onAcquire(e.reply)
		case evLaunched:
			k.onLaunched(e.c, e.err, e.slow)
		case evExited:
			k.onExited(e.c)
		case evBackoffDone:
			if k.state == StateBackoff && len(k.stopping) == 0 {
				k.launch("restart after backoff")
			}
		case evStop:
			k.onStop(e.done)
		default:
			k.onIdleEvent(ev)
		}
		k.snapshot()
		if k.finished() {
			return
		}
	}
}

// finished reports whether a stop has completed: nothing runs or starts any more.
func (k *keeper) finished() bool {
	if len(k.stopping) == 0 || k.child != nil || k.launching {
		return false
	}
	for _, d := range k.stopping {
		close(d)
	}
	return true
}

// transition changes the state and pushes the change. The routine steps of every
// command (start, stop) log at debug; trouble logs at warn.
func (k *keeper) transition(to State, reason string) {
	from := k.state
	if from == to {
		return
	}
	if !Allowed(from, to) {
		k.logger().Error("refused a state change the supervisor does not make", "from", from, "to", to, "reason", reason)
		return
	}
	level := hclog.Debug
	switch to {
	case StateBackoff, StateFailed, StateRefused:
		level = hclog.Warn
	}
	k.logger().Log(level, "plugin state", "from", string(from), "to", string(to), "reason", reason)
	k.state = to
	k.sup.publish(StateChange{Plugin: k.bin.Name, From: from, To: to, Reason: reason, At: time.Now()})
}

func (k *keeper) onAcquire(reply chan<- acquired) {
	if len(k.stopping) > 0 {
		reply <- acquired{err: errShuttingDown}
		return
	}
	switch k.state {
	case StateRefused:
		reply <- acquired{err: k.refused}
		return
	case StateRunning:
		select {
		case <-k.child.Exited():
			// The child is gone but its exit event is still queued: handle it now
			// rather than hand a dead child to a command (which would fail with the
			// previous command's crash), then let this command wait for the restart.
			k.onExited(k.child)
			k.onAcquire(reply)
		default:
			if k.child.why() != "" {
				// The agent has begun to end this child (a kill is not an exit yet:
				// a loaded machine takes a while to reap). A new command waits for
				// the restart instead of meeting the kill.
				k.waiters = append(k.waiters, reply)
				return
			}
			k.use()
			reply <- acquired{c: k.child}
		}
		return
	case StateIdle:
		k.acquireIdle(reply)
	case StateFailed:
		if time.Now().Before(k.failedUntil) {
			reply <- acquired{err: &FailedError{Plugin: k.bin.Name, Reason: k.lastErr, Until: k.failedUntil}}
			return
		}
		k.restarts = nil
		k.waiters = append(k.waiters, reply)
		k.launch("failed period over")
	case StateStopped:
		k.waiters = append(k.waiters, reply)
		k.launch("a command needs it")
	default: // starting, or backoff until the timer restarts it
		k.waiters = append(k.waiters, reply)
	}
}

// launch starts a child in the background; onLaunched gets the outcome.
func (k *keeper) launch(reason string) {
	if k.launching {
		return
	}
	k.launching = true
	k.idle.launched = time.Now()
	k.transition(StateStarting, reason)
	o := k.sup.opts
	cfg := sdk.Config{AgentID: o.AgentID, AgentVersion: o.AgentVersion, DataDir: o.DataDir, LogLevel: o.LogLevel}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), o.StartTimeout)
		defer cancel()
		c, err := k.sup.launcher.Launch(ctx, k.bin, cfg)
		slow := err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)
		if !k.send(evLaunched{c: c, err: err, slow: slow}) && c != nil {
			c.Kill()
		}
	}()
}

func (k *keeper) onLaunched(c Child, err error, slow bool) {
	k.launching = false
	if len(k.stopping) > 0 {
		if c != nil {
			k.child = &child{Child: c}
			k.child.setReason("agent stopped the plugin")
			k.watch(k.child)
			go k.child.Stop(k.sup.opts.StopGrace)
		} else {
			k.transition(StateStopped, errShuttingDown.Error())
		}
		k.answer(acquired{err: errShuttingDown})
		return
	}
	if err != nil {
		var refused *RefusedError
		if errors.As(err, &refused) {
			k.refused, k.lastErr = err, err.Error()
			k.transition(StateRefused, err.Error())
		} else {
			k.failure(err.Error())
			if slow && k.state == StateBackoff {
				// A start that ran out of time on a busy machine may well make it
				// on the restart just scheduled: the commands waiting for it keep
				// waiting, each no longer than its own deadline (acquireBy).
				return
			}
		}
		k.answer(acquired{err: err})
		return
	}
	k.child = &child{Child: c}
	k.idle.inUse, k.idle.took = 0, max(time.Since(k.idle.launched), time.Nanosecond)
	k.transition(StateRunning, fmt.Sprintf("pid %d", c.Pid()))
	k.watch(k.child)
	go k.ping(k.child)
	k.answer(acquired{c: k.child})
	k.armIdle() // when no command was waiting for this start
}

// answer replies to every command waiting for a child.
func (k *keeper) answer(a acquired) {
	for _, w := range k.waiters {
		if a.c != nil {
			k.use()
		}
		w <- a
	}
	k.waiters = nil
}

// watch turns the child's exit into an event for run.
func (k *keeper) watch(c *child) {
	go func() {
		<-c.Exited()
		k.send(evExited{c: c})
	}()
}

func (k *keeper) onExited(c *child) {
	if k.child != c {
		return
	}
	k.child = nil
	reason := c.why()
	if limit := c.memoryKilled(); limit > 0 {
		reason = memoryLimitReason(limit) + " (" + c.ExitStatus() + ")"
	} else if reason == "" {
		reason = "exited unexpectedly (" + c.ExitStatus() + ")"
	}
	if len(k.stopping) > 0 {
		k.transition(StateStopped, reason)
		return
	}
	if k.idleExited(c) {
		return // the agent's own stop: no failure
	}
	k.failure(reason)
}

// failure records a death or a failed start and schedules the next start, or marks the
// plugin failed when the restart budget is spent.
func (k *keeper) failure(reason string) {
	o := k.sup.opts
	now := time.Now()
	kept := k.restarts[:0]
	for _, t := range k.restarts {
		if now.Sub(t) < o.RestartWindow {
			kept = append(kept, t)
		}
	}
	k.restarts = append(kept, now)
	k.total++
	k.lastErr = reason
	delay, restart := o.restartPolicy().Backoff(len(k.restarts))
	if !restart {
		k.failedUntil = now.Add(o.FailedFor)
		k.lastErr = fmt.Sprintf("restarted %d times within %s, last error: %s", len(k.restarts)-1, Seconds(o.RestartWindow), reason)
		k.transition(StateFailed, k.lastErr)
		k.answer(acquired{err: &FailedError{Plugin: k.bin.Name, Reason: k.lastErr, Until: k.failedUntil}})
		return
	}
	k.transition(StateBackoff, reason)
	// Restart eagerly, so the plugin is warm for the next command.
	k.backoff = time.AfterFunc(delay, func() { k.send(evBackoffDone{}) })
}

func (k *keeper) onStop(done chan struct{}) {
	k.stopping = append(k.stopping, done)
	if k.backoff != nil {
		k.backoff.Stop()
	}
	k.cancelIdle()
	k.answer(acquired{err: errShuttingDown})
	switch {
	case k.child != nil && k.child == k.idle.child:
		// Already being stopped for idleness; its exit ends the stop.
	case k.child != nil:
		k.child.setReason("agent stopped the plugin")
		go k.child.Stop(k.sup.opts.StopGrace)
	case k.launching:
		// onLaunched stops what the start produces.
	case k.state != StateRefused:
		k.transition(StateStopped, "agent stopping")
	}
}

// acquire returns a running child, starting one when needed and waiting out a
// scheduled restart.
func (k *keeper) acquire(ctx context.Context) (*child, error) {
	reply := make(chan acquired, 1)
	if !k.send(evAcquire{reply: reply}) {
		return nil, errShuttingDown
	}
	select {
	case a := <-reply:
		return a.c, a.err
	case <-ctx.Done():
		// A child handed over after the caller gave up must still be released, or
		// the plugin would never go idle.
		go func() {
			select {
			case a := <-reply:
				k.release(a.c)
			case <-k.quit:
			}
		}()
		return nil, ctx.Err()
	}
}

// stop ends the running child gracefully and leaves the plugin stopped; it returns
// once the child is gone.
func (k *keeper) stop() {
	done := make(chan struct{})
	if !k.send(evStop{done: done}) {
		return
	}
	select {
	case <-done:
	case <-k.quit:
	}
}

// snapshot publishes the state for Status; run calls it after every event.
func (k *keeper) snapshot() {
	st := Status{
		Name:      k.bin.Name,
		Path:      k.bin.Path,
		State:     k.state,
		Restarts:  k.total,
		LastError: k.lastErr,
	}
	// The last known version and actions, rebuilt only when a new child brings its
	// manifest: run calls this for every command, and the list does not change.
	// status() clones Actions, so snapshots may share it.
	st.Version, st.Actions, st.Protocol = k.snap.Version, k.snap.Actions, k.snap.Protocol
	box := k.lastBox // the last child's counters stay shown until a new child
	if k.child != nil {
		st.Pid = k.child.Pid()
		if b := k.child.box(); b != nil {
			box = b
		}
		if k.child != k.snapChild {
			m := k.child.Manifest()
			st.Version, st.Actions, st.Protocol = m.Version, make([]string, 0, len(m.Actions)), m.Protocol
			for _, a := range m.Actions {
				st.Actions = append(st.Actions, a.Name)
			}
			k.snapChild = k.child
			k.mu.Lock()
			k.snapManifest = m
			k.mu.Unlock()
		}
	}
	st.IdleStop, st.IdleStops, st.StartTook = k.idle.after, k.idle.stops, k.idle.took
	k.mu.Lock()
	k.snap = st
	k.lastBox = box
	k.mu.Unlock()
}

func (k *keeper) status() Status {
	k.mu.Lock()
	defer k.mu.Unlock()
	st := k.snap
	st.Actions = slices.Clone(st.Actions)
	// The box's counters are read now: they change without events.
	if b := k.lastBox; b != nil {
		st.Boxed, st.Limits, st.Usage = true, b.Limits(), b.Usage()
	}
	return st
}
