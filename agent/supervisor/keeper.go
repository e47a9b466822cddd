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
	StateRefused  State = "refused"  // the build may not run (checksum, ownership, permissions, catalog, signature)
)

// transitions is every state change the supervisor makes; anything else is a bug,
// which transition refuses and logs. A refused plugin stays refused until the catalog
// offers another build (Reload), which starts again; a running one becomes refused
// when the catalog stops trusting its build (a revoked key).
var transitions = map[State][]State{
	StateStopped:  {StateStarting, StateRefused},
	StateStarting: {StateRunning, StateBackoff, StateFailed, StateRefused, StateStopped},
	StateRunning:  {StateBackoff, StateFailed, StateStopped, StateIdle, StateRefused, StateStarting},
	StateIdle:     {StateStarting, StateStopped, StateRefused},
	StateBackoff:  {StateStarting, StateStopped, StateRefused},
	StateFailed:   {StateStarting, StateStopped, StateRefused},
	StateRefused:  {StateStarting, StateStopped},
}

// Allowed reports whether the supervisor may move a plugin from one state to another.
func Allowed(from, to State) bool { return slices.Contains(transitions[from], to) }

// StateChange is one transition of one plugin, as pushed to subscribers. An upgrade
// or a rollback that keeps the plugin running is a change from running to running,
// with the reason saying what happened.
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
// restart timer, a stop, a new build from the catalog. Everything else talks to it
// through events, so no state is shared between goroutines except the snapshot Status
// reads.
type keeper struct {
	sup    *Supervisor
	name   string
	events chan any
	quit   chan struct{} // closed when run returns

	// Owned by run.
	bin         Binary // the build commands go to: the catalog's current one
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
	up          upgradeState    // builds replaced under a running agent (upgrade.go)

	mu   sync.Mutex
	snap Status // written by run only, under mu; run may read it without mu
	// snapManifest is snapChild's whole manifest, under mu like snap: what Describe
	// answers while no child runs.
	snapManifest host.Manifest
	rows         rowStats // rows that depart from their declaration (rows.go)
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
		// bin is the build that was started, and candidate says it was started
		// beside a running child to replace it (upgrade.go).
		bin       Binary
		candidate bool
	}
	evExited      struct{ c *child }
	evBackoffDone struct{}
	evStop        struct{ done chan struct{} }
)

func newKeeper(s *Supervisor, b Binary, refused error) *keeper {
	k := &keeper{sup: s, name: b.Name, bin: b, events: make(chan any, 16), quit: make(chan struct{}), state: StateStopped}
	k.idle.after = s.opts.idleStopFor(b.Name)
	k.up.retiring = map[*child]int{}
	if refused != nil {
		k.state, k.refused, k.lastErr = StateRefused, refused, refused.Error()
	}
	k.snapshot()
	go k.run()
	return k
}

func (k *keeper) logger() hclog.Logger { return k.sup.log.With("plugin", k.name) }

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
			if e.candidate {
				k.onCandidate(e)
			} else {
				k.onLaunched(e)
			}
		case evExited:
			k.onExited(e.c)
		case evBackoffDone:
			if k.state == StateBackoff && len(k.stopping) == 0 {
				k.launch("restart after backoff")
			}
		case evStop:
			k.onStop(e.done)
		default:
			if !k.onIdleEvent(ev) {
				k.onUpgradeEvent(ev)
			}
		}
		k.snapshot()
		if h, ok := ev.(interface{ handled() }); ok {
			h.handled()
		}
		if k.finished() {
			return
		}
	}
}

// finished reports whether a stop has completed: nothing runs or starts any more.
func (k *keeper) finished() bool {
	if len(k.stopping) == 0 || k.child != nil || k.launching || k.up.candLaunching || len(k.up.retiring) > 0 {
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
	k.sup.publish(StateChange{Plugin: k.name, From: from, To: to, Reason: reason, At: time.Now()})
}

func (k *keeper) onAcquire(reply chan<- acquired) {
	if k.up.removed {
		reply <- acquired{err: &unknownPluginError{name: k.name}}
		return
	}
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
			reply <- acquired{err: &FailedError{Plugin: k.name, Reason: k.lastErr, Until: k.failedUntil}}
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

// config is what every child of the plugin is configured with.
func (k *keeper) config() sdk.Config { return sdkConfig(k.sup.opts) }

// sdkConfig is what the options configure every child with.
func sdkConfig(o Options) sdk.Config {
	return sdk.Config{AgentID: o.AgentID, AgentVersion: o.AgentVersion, DataDir: o.DataDir, LogLevel: o.LogLevel}
}

// launch starts a child of the current build in the background; onLaunched gets the
// outcome.
func (k *keeper) launch(reason string) {
	if k.launching {
		return
	}
	k.launching = true
	k.idle.launched = time.Now()
	k.transition(StateStarting, reason)
	k.startChild(k.bin, false)
}

// startChild starts a child of bin in the background and reports it to run as
// evLaunched.
func (k *keeper) startChild(bin Binary, candidate bool) {
	o := k.sup.opts
	cfg := k.config()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), o.StartTimeout)
		defer cancel()
		c, err := k.sup.launcher.Launch(ctx, bin, cfg)
		slow := err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)
		if !k.send(evLaunched{c: c, err: err, slow: slow, bin: bin, candidate: candidate}) && c != nil {
			c.Kill()
		}
	}()
}

func (k *keeper) onLaunched(e evLaunched) {
	k.launching = false
	if len(k.stopping) > 0 || k.up.removed {
		k.discard(e.c, e.bin, "agent stopped the plugin")
		k.transition(StateStopped, errShuttingDown.Error())
		k.answer(acquired{err: errShuttingDown})
		return
	}
	if k.state == StateRefused {
		k.discard(e.c, e.bin, "its build is no longer trusted")
		return
	}
	if !e.bin.same(k.bin) {
		// The catalog moved on while this start ran: what it started is not the
		// build commands go to. Start that one instead.
		k.discard(e.c, e.bin, "replaced by another build while it started")
		k.launch("start the catalog's current build " + k.bin.Build)
		return
	}
	err := e.err
	if err == nil {
		err = k.checkIdentity(e.c)
		if err != nil {
			e.c.Kill()
		}
	}
	if err != nil {
		if k.probationFailure(err, e.slow) {
			return // rolled back: a start of the previous build is under way
		}
		var refused *RefusedError
		if errors.As(err, &refused) {
			k.refused, k.lastErr = err, err.Error()
			k.transition(StateRefused, err.Error())
		} else {
			k.failure(err.Error())
			if e.slow && k.state == StateBackoff {
				// A start that ran out of time on a busy machine may well make it
				// on the restart just scheduled: the commands waiting for it keep
				// waiting, each no longer than its own deadline (acquireBy).
				return
			}
		}
		k.answer(acquired{err: err})
		return
	}
	k.child = &child{Child: e.c, bin: e.bin}
	k.idle.inUse, k.idle.took = 0, max(time.Since(k.idle.launched), time.Nanosecond)
	k.transition(StateRunning, fmt.Sprintf("pid %d", e.c.Pid()))
	k.watch(k.child)
	go k.ping(k.child)
	k.answer(acquired{c: k.child})
	k.armIdle() // when no command was waiting for this start
}

// discard stops a child nobody will use (nil: nothing to stop), keeping it watched
// so that a stop waits for it.
func (k *keeper) discard(c Child, bin Binary, reason string) {
	if c == nil {
		return
	}
	ch := &child{Child: c, bin: bin}
	ch.setReason(reason)
	k.up.retiring[ch] = 0
	k.watch(ch)
	go ch.Stop(k.sup.opts.StopGrace)
}

// checkIdentity holds a started child to its build's description: the name and, when
// the catalog knows it, the version. A child that says otherwise is refused: the
// catalog vouched for another build than the one that answered.
func (k *keeper) checkIdentity(c Child) error {
	m := c.Manifest()
	if m.Name != k.name {
		return &RefusedError{Path: k.bin.Path, Reason: fmt.Sprintf("it says its name is %q", m.Name)}
	}
	if k.bin.Version != "" && m.Version != k.bin.Version {
		return &RefusedError{Path: k.bin.Path, Reason: fmt.Sprintf("it says it is version %q, the catalog says %q", m.Version, k.bin.Version)}
	}
	return nil
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
	if _, old := k.up.retiring[c]; old {
		delete(k.up.retiring, c) // replaced or drained: its end is no failure
		return
	}
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
	if len(k.stopping) > 0 || k.up.removed {
		k.transition(StateStopped, reason)
		return
	}
	if k.idleExited(c) {
		return // the agent's own stop: no failure
	}
	if k.state == StateRefused {
		return // the catalog stopped trusting its build (upgrade.go)
	}
	if k.probationCrash(c, reason) {
		return
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
		k.answer(acquired{err: &FailedError{Plugin: k.name, Reason: k.lastErr, Until: k.failedUntil}})
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
	k.stopRetiring()
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
