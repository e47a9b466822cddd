// Package dispatch sits between whoever submits commands (the CLI now, the fleet
// session later) and the supervisor: it bounds how many commands run at once on each
// plugin and how many wait, and refuses overflow with a clear error instead of
// dropping it.
package dispatch

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/sdk"
)

// ErrQueueFull is returned when the agent-wide queue is full. Its text is the upstream
// agent's REJECTED output.
var ErrQueueFull = errors.New("agent overloaded: command queue full")

// Executor runs a command; *supervisor.Supervisor is one.
type Executor interface {
	Execute(ctx context.Context, req supervisor.Request, onRows func([]string) error) (sdk.Result, error)
}

// Options bound the dispatcher. Zero values take the defaults of docs/agent.md.
type Options struct {
	// PerPlugin is how many commands run at once on one plugin: max(4, cores).
	PerPlugin int
	// QueueSize is how many commands may wait for a slot, agent-wide: 1,000.
	QueueSize int
}

// Dispatcher bounds concurrency per plugin and the shared queue.
type Dispatcher struct {
	exec      Executor
	perPlugin int
	queue     chan struct{} // one token per waiting command

	mu    sync.Mutex
	slots map[string]chan struct{}
}

// New returns a Dispatcher in front of exec.
func New(exec Executor, o Options) *Dispatcher {
	if o.PerPlugin <= 0 {
		o.PerPlugin = max(4, runtime.NumCPU())
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 1000
	}
	return &Dispatcher{exec: exec, perPlugin: o.PerPlugin, queue: make(chan struct{}, o.QueueSize), slots: map[string]chan struct{}{}}
}

func (d *Dispatcher) slotsFor(plugin string) chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.slots[plugin]
	if !ok {
		s = make(chan struct{}, d.perPlugin)
		d.slots[plugin] = s
	}
	return s
}

// Do runs req when its plugin has a free slot. The command's deadline starts now: time
// spent waiting counts against req.Timeout. A full queue answers ErrQueueFull at once.
func (d *Dispatcher) Do(ctx context.Context, req supervisor.Request, onRows func([]string) error) (sdk.Result, error) {
	if req.Timeout > 0 && req.Deadline.IsZero() {
		req.Deadline = time.Now().Add(req.Timeout)
	}
	slots := d.slotsFor(req.Plugin)
	select {
	case slots <- struct{}{}: // a slot is free: no need to queue
	default:
		select {
		case d.queue <- struct{}{}:
		default:
			return sdk.Result{}, ErrQueueFull
		}
		waitCtx := ctx
		if !req.Deadline.IsZero() {
			var cancel context.CancelFunc
			waitCtx, cancel = context.WithDeadline(ctx, req.Deadline)
			defer cancel()
		}
		select {
		case slots <- struct{}{}:
			<-d.queue
		case <-waitCtx.Done():
			<-d.queue
			if ctx.Err() != nil {
				return sdk.Result{}, ctx.Err()
			}
			return sdk.Result{}, &supervisor.WaitTimeoutError{Plugin: req.Plugin, Deadline: req.Timeout, For: "a free slot on plugin " + req.Plugin}
		}
	}
	defer func() { <-slots }()
	return d.exec.Execute(ctx, req, onRows)
}
