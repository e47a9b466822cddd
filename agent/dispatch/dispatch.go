// Package dispatch is the one admission control of the agent, between whoever submits
// commands (exec, the shell and the fleet session, each the same way) and the
// supervisor. It owns what happens to a command before it reaches its plugin: the
// deadline, fixed once from the command's timeout (Request.SetDeadline); how many
// commands run at once on each plugin and how many wait agent-wide, refusing overflow
// with ErrQueueFull instead of dropping it; the expiry, refusing with ErrExpired a
// command that passes it before it starts; and the start itself, announced to the
// submitter (Request.OnStart) just before the plugin has the command. It also writes
// the audit line of every command (docs/agent.md "Audit trail"). What only the fleet
// needs (stagger and delay, the journal, duplicate ids, parameter caps, the answers)
// stays in the session, which sizes its own flood bound from Limits.
package dispatch

import (
	"context"
	"errors"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// ErrQueueFull is returned when the agent-wide queue is full. Its text is the upstream
// agent's REJECTED output.
var ErrQueueFull = errors.New("agent overloaded: command queue full")

// ErrExpired is returned for a command whose Expiry passed before it could start (it
// queued for a slot past it). The command never reached its plugin. Its text is the
// fleet's REJECTED output (docs/fleet.md).
var ErrExpired = errors.New("command expired")

// Request is one command for the dispatcher: the supervisor's request (plugin, the
// command, its timeout and deadline) and what admission alone needs.
type Request struct {
	supervisor.Request
	// Expiry, when set, is the last moment the command may start: one still queued
	// for a slot then is refused with ErrExpired when the slot comes, and never runs.
	Expiry time.Time
	// OnStart, when set, is called exactly once, just before the command goes to its
	// plugin (after its slot and its expiry check), on Do's goroutine, and never for a
	// command that does not start. Its return ends the admission: the fleet session
	// records the start in its journal there, before the plugin can act. An error
	// refuses the command instead: Do returns it, and the plugin never has it (a start
	// the journal could not record must not run).
	OnStart func() error
}

// SetDeadline fixes the command's deadline, when it has none, at Timeout from now
// (none when Timeout is 0), and returns it. Do calls it; a submitter that needs the
// deadline before Do (the session's watchdog, exec asking the plugin for its row
// declarations) calls it first, and the clock then starts there, once.
func (r *Request) SetDeadline() time.Time {
	if r.Timeout > 0 && r.Deadline.IsZero() {
		r.Deadline = time.Now().Add(r.Timeout)
	}
	return r.Deadline
}

func (r *Request) expired(t time.Time) bool { return !r.Expiry.IsZero() && t.After(r.Expiry) }

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
	// Audit, when set, gets one line per command once it has ended, at AuditLevel
	// (info when zero): its id, plugin, action, parameter names, status, rc and
	// duration. Parameter values (which may be secrets) only when Audit logs debug.
	Audit      hclog.Logger
	AuditLevel hclog.Level
}

// Limits are a Dispatcher's effective bounds, defaults applied.
type Limits struct {
	PerPlugin int // commands running at once on one plugin
	QueueSize int // commands waiting for a slot, agent-wide
}

// Dispatcher bounds concurrency per plugin and the shared queue.
type Dispatcher struct {
	exec      Executor
	perPlugin int
	queue     chan struct{} // one token per waiting command

	audit      hclog.Logger
	auditLevel hclog.Level

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
	if o.AuditLevel == hclog.NoLevel {
		o.AuditLevel = hclog.Info
	}
	return &Dispatcher{exec: exec, perPlugin: o.PerPlugin, queue: make(chan struct{}, o.QueueSize), slots: map[string]chan struct{}{},
		audit: o.Audit, auditLevel: o.AuditLevel}
}

// Limits returns the bounds d applies.
func (d *Dispatcher) Limits() Limits { return Limits{PerPlugin: d.perPlugin, QueueSize: cap(d.queue)} }

// logAudit writes req's audit line: once per command, whatever its end.
func (d *Dispatcher) logAudit(req supervisor.Request, res sdk.Result, err error, took time.Duration) {
	if d.audit == nil {
		return
	}
	names := make([]string, 0, len(req.Params))
	for k := range req.Params {
		names = append(names, k)
	}
	sort.Strings(names)
	args := []any{"id", rows.Printable(req.ID), "plugin", rows.Printable(req.Plugin), "action", rows.Printable(req.Action),
		"params", rows.Printable(strings.Join(names, ","))}
	if err != nil {
		args = append(args, "status", "agent_error", "rc", 1, "error", rows.Printable(err.Error()))
	} else {
		args = append(args, "status", res.Status.String(), "completeness", res.Completeness.String(), "rc", res.Code)
	}
	args = append(args, "duration", supervisor.Seconds(took))
	level := d.auditLevel
	if errors.Is(err, ErrQueueFull) || errors.Is(err, ErrExpired) {
		// Refused at the door, as the session's own rejections: at debug, so that a
		// flood of commands cannot flood the log.
		level = min(level, hclog.Debug)
	}
	if d.audit.IsDebug() {
		values := make([]string, 0, len(names))
		for _, k := range names {
			values = append(values, rows.Printable(k)+"="+strconv.Quote(req.Params[k]))
		}
		args = append(args, "values", strings.Join(values, " "))
	}
	d.audit.Log(level, "command", args...)
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

// Do runs req when its plugin has a free slot. The command's deadline starts now
// unless SetDeadline started it already: time spent waiting counts against
// req.Timeout. A full queue answers ErrQueueFull at once; a command whose Expiry
// passed while it queued answers ErrExpired when its slot comes.
func (d *Dispatcher) Do(ctx context.Context, req Request, onRows func([]string) error) (sdk.Result, error) {
	start := time.Now()
	res, err := d.do(ctx, req, onRows)
	d.logAudit(req.Request, res, err, time.Since(start))
	return res, err
}

func (d *Dispatcher) do(ctx context.Context, req Request, onRows func([]string) error) (sdk.Result, error) {
	req.SetDeadline()
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
	// Checked with the slot in hand, so that "expired" means "never started".
	if req.expired(time.Now()) {
		return sdk.Result{}, ErrExpired
	}
	if req.OnStart != nil {
		if err := req.OnStart(); err != nil {
			return sdk.Result{}, err
		}
	}
	return d.exec.Execute(ctx, req.Request, onRows)
}
