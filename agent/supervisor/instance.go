package supervisor

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/yuzugo/yuzu/agent/internal/manifest"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
)

// State is where a plugin is in its life cycle.
type State string

// The states of a plugin.
const (
	StateStopped  State = "stopped"  // not started yet, or stopped by the agent
	StateStarting State = "starting" // handshake, Describe and Configure under way
	StateRunning  State = "running"  // child up and answering
	StateBackoff  State = "backoff"  // child died; restart scheduled
	StateFailed   State = "failed"   // restart budget spent; refused until the failed period ends
	StateRefused  State = "refused"  // binary may not run (checksum, permissions, manifest)
)

// exitPoll is how often a running child is checked for having exited. go-plugin does
// not expose an exit channel; a cheap poll notices a crash between commands quickly.
const exitPoll = 100 * time.Millisecond

// instance is one plugin's state machine.
type instance struct {
	sup *Supervisor
	bin *binary

	startMu sync.Mutex // one start at a time

	mu          sync.Mutex
	state       State
	child       *child
	manifest    host.Manifest // last known, kept across restarts for Status
	restarts    []time.Time   // restarts within the window, oldest first
	total       int           // restarts ever
	lastErr     string
	nextStart   time.Time
	failedUntil time.Time
}

// child is one running process of a plugin.
type child struct {
	client   *plugin.Client
	rpc      *host.Client
	manifest host.Manifest
	pid      int
	done     chan struct{} // closed once the process is known to be gone
	wake     chan struct{} // nudges the watcher to look now (after a kill)
	reason   atomic.Pointer[string]
}

// setReason records why the agent is ending the child, first reason wins.
func (c *child) setReason(r string) { c.reason.CompareAndSwap(nil, &r) }

func (c *child) why() string {
	if r := c.reason.Load(); r != nil {
		return *r
	}
	return ""
}

func (i *instance) logger() hclog.Logger { return i.sup.log.With("plugin", i.bin.name) }

// transition changes state and logs it; i.mu must be held. The routine steps of every
// command (start, stop) log at debug; trouble logs at warn.
func (i *instance) transition(to State, reason string) {
	if i.state == to {
		return
	}
	level := hclog.Debug
	switch to {
	case StateBackoff, StateFailed, StateRefused:
		level = hclog.Warn
	}
	i.logger().Log(level, "plugin state", "from", string(i.state), "to", string(to), "reason", reason)
	i.state = to
}

// acquire returns a running child, starting one when needed and waiting out a
// scheduled backoff.
func (i *instance) acquire(ctx context.Context) (*child, error) {
	for {
		i.mu.Lock()
		switch i.state {
		case StateRefused:
			err := i.bin.refused
			if err == nil {
				err = &RefusedError{Path: i.bin.path, Reason: i.lastErr}
			}
			i.mu.Unlock()
			return nil, err
		case StateRunning:
			c := i.child
			i.mu.Unlock()
			return c, nil
		case StateFailed:
			if time.Now().Before(i.failedUntil) {
				err := &FailedError{Plugin: i.bin.name, Reason: i.lastErr, Until: i.failedUntil}
				i.mu.Unlock()
				return nil, err
			}
			i.restarts = nil
			i.transition(StateStopped, "failed period over")
		case StateBackoff:
			wait := time.Until(i.nextStart)
			i.mu.Unlock()
			if wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return nil, ctx.Err()
				case <-t.C:
				}
			}
			if _, err := i.start(); err != nil {
				return nil, err
			}
			continue
		}
		i.mu.Unlock()
		if _, err := i.start(); err != nil {
			return nil, err
		}
	}
}

// start launches a child unless one is running. Only one start runs at a time.
func (i *instance) start() (*child, error) {
	i.startMu.Lock()
	defer i.startMu.Unlock()
	i.mu.Lock()
	switch i.state {
	case StateRunning:
		c := i.child
		i.mu.Unlock()
		return c, nil
	case StateRefused, StateFailed:
		i.mu.Unlock()
		return nil, nil // acquire reports the state
	case StateBackoff:
		if time.Now().Before(i.nextStart) {
			i.mu.Unlock()
			return nil, nil // acquire waits
		}
	}
	if i.sup.isClosed() {
		i.mu.Unlock()
		return nil, errors.New("agent is shutting down")
	}
	i.transition(StateStarting, "command needs it")
	i.mu.Unlock()

	c, err := i.launch()

	i.mu.Lock()
	defer i.mu.Unlock()
	if err != nil {
		var refused *RefusedError
		if errors.As(err, &refused) {
			i.lastErr = err.Error()
			i.transition(StateRefused, err.Error())
			return nil, err
		}
		i.failure(err.Error())
		return nil, err
	}
	if i.sup.isClosed() {
		go i.kill(c, "agent is shutting down")
		return nil, errors.New("agent is shutting down")
	}
	i.child = c
	i.manifest = c.manifest
	i.transition(StateRunning, fmt.Sprintf("pid %d", c.pid))
	go i.watch(c)
	return c, nil
}

// failure records a death or a failed start and schedules the next start, or marks
// the plugin failed when the restart budget is spent; i.mu must be held.
func (i *instance) failure(reason string) {
	now := time.Now()
	o := i.sup.opts
	kept := i.restarts[:0]
	for _, t := range i.restarts {
		if now.Sub(t) < o.RestartWindow {
			kept = append(kept, t)
		}
	}
	i.restarts = append(kept, now)
	i.total++
	i.lastErr = reason
	if len(i.restarts) > o.RestartBudget {
		i.failedUntil = now.Add(o.FailedFor)
		i.transition(StateFailed, fmt.Sprintf("%d restarts within %s; last: %s", len(i.restarts)-1, o.RestartWindow, reason))
		i.lastErr = fmt.Sprintf("restarted %d times within %s, last error: %s", len(i.restarts)-1, o.RestartWindow, reason)
		return
	}
	delay := o.BackoffMin << (len(i.restarts) - 1)
	if delay > o.BackoffMax || delay <= 0 {
		delay = o.BackoffMax
	}
	i.nextStart = now.Add(delay)
	i.transition(StateBackoff, reason)
	// Restart eagerly so the plugin is warm for the next command.
	time.AfterFunc(delay, func() {
		if !i.sup.isClosed() {
			_, _ = i.start()
		}
	})
}

// launch verifies and starts the binary, then describes and configures the plugin.
func (i *instance) launch() (*child, error) {
	o := i.sup.opts
	if err := checkFile(i.bin.path); err != nil {
		return nil, err
	}
	cmd := exec.Command(i.bin.path)
	cmd.Env = childEnv(os.Environ(), hostOS)
	prepareCmd(cmd)
	cfg := host.ClientConfig(cmd)
	cfg.SecureConfig = &plugin.SecureConfig{Checksum: i.bin.checksum, Hash: sha256.New()}
	cfg.Logger = pluginLogger(i.sup.log, i.bin.name)
	cfg.StartTimeout = o.StartTimeout
	client := plugin.NewClient(cfg)
	cp, err := client.Client()
	if err != nil {
		client.Kill()
		if errors.Is(err, plugin.ErrChecksumsDoNotMatch) {
			return nil, &RefusedError{Path: i.bin.path, Reason: "SHA-256 does not match " + manifest.FileName}
		}
		return nil, &StartError{Plugin: i.bin.name, Err: err}
	}
	c := &child{client: client, done: make(chan struct{}), wake: make(chan struct{}, 1)}
	if rc := client.ReattachConfig(); rc != nil {
		c.pid = rc.Pid
	}
	fail := func(err error) (*child, error) {
		killTree(c.pid)
		client.Kill()
		return nil, &StartError{Plugin: i.bin.name, Err: err}
	}
	c.rpc, err = host.Dispense(cp)
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.StartTimeout)
	defer cancel()
	c.manifest, err = c.rpc.Describe(ctx)
	if err != nil {
		return fail(fmt.Errorf("describe: %w", err))
	}
	if c.manifest.Name != i.bin.name {
		return fail(fmt.Errorf("binary %s says its name is %q", i.bin.path, c.manifest.Name))
	}
	err = c.rpc.Configure(ctx, sdk.Config{
		AgentID:      o.AgentID,
		AgentVersion: o.AgentVersion,
		DataDir:      o.DataDir,
		LogLevel:     o.LogLevel,
	})
	if err != nil {
		return fail(fmt.Errorf("configure: %w", err))
	}
	return c, nil
}

// pluginLogger is the logger go-plugin relays the child's stderr through. go-plugin
// logs every start and clean exit at info level; below debug those lines are noise
// on every `exec`, so the logger starts at warn unless the agent is debugging. The
// agent's logger is built with IndependentLevels, so this does not change its level.
func pluginLogger(log hclog.Logger, name string) hclog.Logger {
	l := log.Named(name)
	if lvl := l.GetLevel(); lvl >= hclog.Info || lvl == hclog.NoLevel {
		l.SetLevel(hclog.Warn)
	}
	return l
}

// watch notices the child's exit and pings it; three missed pings restart it.
func (i *instance) watch(c *child) {
	tick := time.NewTicker(exitPoll)
	defer tick.Stop()
	lastPing := time.Now()
	misses := 0
	for {
		select {
		case <-tick.C:
		case <-c.wake:
		}
		if c.client.Exited() {
			break
		}
		if time.Since(lastPing) < i.sup.opts.PingInterval {
			continue
		}
		lastPing = time.Now()
		if err := ping(c, i.sup.opts.PingInterval); err != nil {
			misses++
			i.logger().Warn("health ping failed", "misses", misses, "error", err)
			if misses >= i.sup.opts.PingMisses {
				i.kill(c, fmt.Sprintf("no answer to %d health pings", misses))
				break
			}
		} else {
			misses = 0
		}
	}
	// Let go-plugin release the connection. The process is not signalled here: once it
	// has been reaped its pid may already belong to someone else.
	c.client.Kill()
	i.mu.Lock()
	if i.child == c {
		i.child = nil
		reason := c.why()
		if reason == "" {
			reason = "exited unexpectedly"
		}
		if i.sup.isClosed() || i.state == StateStopped {
			i.transition(StateStopped, reason)
		} else {
			i.failure(reason)
		}
	}
	i.mu.Unlock()
	close(c.done)
}

func ping(c *child, timeout time.Duration) error {
	cp, err := c.client.Client()
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- cp.Ping() }()
	select {
	case err := <-errc:
		return err
	case <-time.After(timeout):
		return fmt.Errorf("no answer within %s", timeout)
	}
}

// kill ends the child at once (whole process group) with a recorded reason.
func (i *instance) kill(c *child, reason string) {
	c.setReason(reason)
	i.logger().Warn("killing plugin", "pid", c.pid, "reason", reason)
	killTree(c.pid)
	c.nudge()
}

// nudge wakes the watcher so an exit is noticed without waiting for the next poll.
func (c *child) nudge() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// stop ends the running child gracefully (go-plugin closes the connection and waits
// briefly) and leaves the plugin stopped.
func (i *instance) stop() {
	i.mu.Lock()
	c := i.child
	if i.state != StateRefused && i.state != StateFailed {
		i.transition(StateStopped, "agent stopping")
	}
	i.mu.Unlock()
	if c == nil {
		return
	}
	c.setReason("agent stopped the plugin")
	c.client.Kill() // graceful close, then a hard kill after go-plugin's wait
	c.nudge()
	<-c.done
}

func (i *instance) status() Status {
	i.mu.Lock()
	defer i.mu.Unlock()
	st := Status{
		Name:      i.bin.name,
		Path:      i.bin.path,
		State:     i.state,
		Version:   i.manifest.Version,
		Restarts:  i.total,
		LastError: i.lastErr,
	}
	for _, a := range i.manifest.Actions {
		st.Actions = append(st.Actions, a.Name)
	}
	if i.child != nil {
		st.Pid = i.child.pid
	}
	return st
}

// execute runs one command on a running child, enforcing its deadline: past the
// deadline plus the grace period the child is killed. A command cancelled by its
// caller gets the same grace to stop before the child is killed.
func (i *instance) execute(ctx context.Context, req Request, onRows func([]string) error) (sdk.Result, error) {
	start := time.Now()
	deadline := req.Deadline
	if deadline.IsZero() && req.Timeout > 0 {
		deadline = start.Add(req.Timeout)
	}
	timeout := req.Timeout
	if timeout <= 0 && !deadline.IsZero() {
		timeout = deadline.Sub(start)
	}
	c, err := i.acquire(ctx)
	if err != nil {
		return sdk.Result{}, err
	}
	grace := i.sup.opts.Grace
	var timedOut atomic.Bool
	if !deadline.IsZero() {
		t := time.AfterFunc(time.Until(deadline)+grace, func() {
			timedOut.Store(true)
			c.setReason("stopped after another command timed out")
			i.kill(c, fmt.Sprintf("command %q (%s) passed its deadline plus %s grace", req.ID, req.Action, grace))
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
			i.kill(c, fmt.Sprintf("command %q (%s) did not stop within %s of its cancellation", req.ID, req.Action, grace))
		}
	})
	defer stopCancelWatch()

	res, err := c.rpc.Execute(ctx, host.Command{ID: req.ID, Action: req.Action, Params: req.Params, Deadline: deadline}, onRows)
	if err == nil {
		return res, nil
	}
	if timedOut.Load() {
		return sdk.Result{}, &TimeoutError{Plugin: i.bin.name, Deadline: timeout}
	}
	if ctx.Err() != nil {
		return sdk.Result{}, ctx.Err()
	}
	// The stream broke: wait for the watcher to confirm the child is gone.
	select {
	case <-c.done:
		detail := c.why()
		if detail == "" {
			detail = i.bin.name + " exited during the command"
		}
		return sdk.Result{}, &CrashedError{Plugin: i.bin.name, Detail: detail}
	case <-time.After(2 * time.Second):
	}
	// Still alive but the stream failed: the protocol is broken; do not trust the child.
	i.kill(c, "stream failed: "+err.Error())
	return sdk.Result{}, &CrashedError{Plugin: i.bin.name, Detail: "lost the command stream: " + err.Error()}
}
