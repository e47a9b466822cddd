// Package dispatch sits between whoever submits commands (exec, the shell and the
// fleet session) and the supervisor: it bounds how many commands run at once on each
// plugin and how many wait, refuses overflow with a clear error instead of dropping
// it, and writes the audit line of every command (docs/agent.md "Audit trail").
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
	if d.audit.IsDebug() {
		values := make([]string, 0, len(names))
		for _, k := range names {
			values = append(values, rows.Printable(k)+"="+strconv.Quote(req.Params[k]))
		}
		args = append(args, "values", strings.Join(values, " "))
	}
	d.audit.Log(d.auditLevel, "command", args...)
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
	start := time.Now()
	res, err := d.do(ctx, req, onRows)
	d.logAudit(req, res, err, time.Since(start))
	return res, err
}

func (d *Dispatcher) do(ctx context.Context, req supervisor.Request, onRows func([]string) error) (sdk.Result, error) {
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
