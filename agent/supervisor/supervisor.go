// Package supervisor keeps one managed child process per plugin the catalog names: it
// verifies each build before it runs and runs exactly the bytes it verified, starts it
// through go-plugin with automatic mutual TLS, pings it, restarts it with exponential
// backoff inside a restart budget, marks it failed when the budget is spent, kills it
// when a command outlives its deadline, and follows the catalog while it runs.
//
// Two parts: a Launcher verifies and starts a child (pluginLauncher does it for real),
// and one keeper per plugin owns that plugin's state machine (stopped, starting,
// running, idle, backoff, failed, refused) in a single goroutine that reacts to events;
// lazy start and idle stop are in idle.go, upgrades and rollbacks in upgrade.go.
// Every transition is logged with its reason, pushed to subscribers (Subscribe; the
// shell shows crashes and restarts with it) and shows in Status (status.go). The
// keeper's state machine is in keeper.go; running one command on a live child
// (deadline, grace, cancellation, telling a crash from a broken stream) in execute.go;
// the health ping in health.go; the check of written rows in rows.go; reading the
// catalog in discover.go and following it in reload.go. See docs/agent.md in the
// repository for the rules and their reasons.
package supervisor

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/internal/limits"
	"github.com/yuzugo/yuzu/agent/trust"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
)

// Options configure a Supervisor. Zero values take the defaults of docs/agent.md.
type Options struct {
	PluginDir    string
	DataDir      string
	AgentID      string
	AgentVersion string
	LogLevel     string
	Logger       hclog.Logger

	// The restart numbers; their defaults are host.DefaultRestartPolicy.
	BackoffMin    time.Duration // first restart delay, doubled per restart: 100 ms
	BackoffMax    time.Duration // 30 s
	RestartBudget int           // restarts allowed within RestartWindow: 5
	RestartWindow time.Duration // 60 s
	FailedFor     time.Duration // how long a plugin stays failed: 5 min
	PingInterval  time.Duration // 10 s
	PingMisses    int           // consecutive failed pings that restart the child: 3
	Grace         time.Duration // past the deadline before the child is killed: 5 s
	StartTimeout  time.Duration // verify, handshake, Describe and Configure: 10 s
	StopGrace     time.Duration // a stopping child's time to exit before it is killed: 2 s

	// Launcher starts the children; nil means the real one (go-plugin, verified
	// binaries). Tests give a fake.
	Launcher Launcher
	// ReapOrphans makes the agent the adopter of whatever a dead plugin leaves behind
	// (Linux child subreaper) and kills it. Only a process whose children are all
	// plugins may set it: the CLI agent does, tests that start other processes do not.
	ReapOrphans bool
	// Limits are each plugin's resource limits (docs/agent.md "Resource limits");
	// a zero Default means limits.Default. The real launcher alone applies them.
	Limits limits.Set
	// Disabled names plugins the configuration turns off: kept, refused, so that
	// Status and a command for one say why.
	Disabled map[string]bool
	// IdleStop is how long a plugin's child may go with no command in flight before
	// it is stopped (docs/agent.md "Lazy start and idle stop"), by plugin name, "*"
	// for the plugins not named. A plugin with none, or 0, is never stopped for
	// being idle.
	IdleStop map[string]time.Duration

	// Keys are the publishers' keys; nil or none configured means unsigned plugins
	// run (docs/agent.md "Plugin catalog and signatures").
	Keys *trust.Keys
	// TrustDir keeps the version floors (in the data dir); a rollback writes there.
	TrustDir string
	// Probation is how long after an upgrade the new build is rolled back when it
	// fails: 10 minutes.
	Probation time.Duration
	// OnRollback, when set, records a rollback instead of the supervisor's own write
	// to the catalog (tests).
	OnRollback func(plugin string, from, to Binary, reason string) error
}

// idleStopFor is the idle stop of one plugin: its own, else "*", else never.
func (o *Options) idleStopFor(name string) time.Duration {
	if d, ok := o.IdleStop[name]; ok {
		return d
	}
	return o.IdleStop["*"]
}

func (o *Options) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	rp := host.DefaultRestartPolicy()
	def(&o.BackoffMin, rp.BackoffMin)
	def(&o.BackoffMax, rp.BackoffMax)
	def(&o.RestartWindow, rp.Window)
	def(&o.FailedFor, rp.FailedFor)
	def(&o.PingInterval, 10*time.Second)
	def(&o.Grace, 5*time.Second)
	def(&o.StartTimeout, 10*time.Second)
	def(&o.StopGrace, 2*time.Second)
	def(&o.Probation, 10*time.Minute)
	if o.RestartBudget <= 0 {
		o.RestartBudget = rp.Budget
	}
	if o.PingMisses <= 0 {
		o.PingMisses = 3
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
}

// restartPolicy is the options' restart numbers as the policy that applies them.
func (o *Options) restartPolicy() host.RestartPolicy {
	return host.RestartPolicy{BackoffMin: o.BackoffMin, BackoffMax: o.BackoffMax,
		Budget: o.RestartBudget, Window: o.RestartWindow, FailedFor: o.FailedFor}
}

// Supervisor manages the plugins of one plugin directory.
type Supervisor struct {
	opts     Options
	log      hclog.Logger
	launcher Launcher

	mu       sync.Mutex
	keepers  map[string]*keeper
	draining map[*keeper]bool // removed from the catalog, finishing their commands
	closed   bool
	subs     map[*subscriber]struct{}

	reloadMu sync.Mutex // one Reload at a time
	seen     catalogStamp
}

// New reads the catalog of opts.PluginDir. Nothing is started until a command needs
// it (or Start is called). Plugins that may not run are kept, refused, so that
// commands and Status can say why. An error means the plugin dir itself may not be
// used (missing, unreadable, or writable by someone other than root and the agent's
// user).
func New(opts Options) (*Supervisor, error) {
	opts.defaults()
	s := &Supervisor{opts: opts, log: opts.Logger, keepers: map[string]*keeper{}, draining: map[*keeper]bool{}, subs: map[*subscriber]struct{}{}}
	s.seen = stampOf(opts.PluginDir)
	view, err := discover(opts.PluginDir, opts.Keys)
	if err != nil {
		return nil, err
	}
	for _, n := range view.notes {
		s.log.Info(n)
	}
	s.launcher = opts.Launcher
	if s.launcher == nil {
		s.launcher = newPluginLauncher(opts)
	}
	for _, name := range sortedNames(view.bins) {
		b := s.admit(name, view.bins[name])
		s.keepers[name] = newKeeper(s, b.Binary, b.refused)
	}
	return s, nil
}

// admit applies what the configuration says of a plugin (disabled) and logs a
// refusal.
func (s *Supervisor) admit(name string, b *offered) *offered {
	if b.refused == nil && s.opts.Disabled[name] {
		b.refused = &RefusedError{Path: b.Path, Reason: "disabled in the configuration file (plugins." + name + ".enabled: false)"}
	}
	if b.refused != nil {
		s.log.Warn("plugin refused", "plugin", name, "reason", b.refused.Error())
	}
	return b
}

// Request is one command for a plugin: the command the plugin runs (host.Command:
// its id, action, parameters, deadline and progress callback) with what only the agent
// needs, which plugin runs it and the run time it is allowed.
type Request struct {
	Plugin string
	host.Command
	// Timeout is the command's allowed run time. Command.Deadline, when set, is when
	// it ends (the submitter may have queued it for part of Timeout); when zero the
	// deadline is Timeout from the start of Execute.
	Timeout time.Duration
	// ParkAfter asks that a plugin found idle be left idle: once the command is done
	// its child is stopped again at once (when the plugin has an idle stop and nothing
	// else holds the child), as Prime does. The agent's own reads, such as the
	// registration's tags, use it so that they do not keep a child running for an idle
	// period no command asked for.
	ParkAfter bool
}

func (s *Supervisor) keeper(name string) (*keeper, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errShuttingDown
	}
	k, ok := s.keepers[name]
	if !ok {
		return nil, &unknownPluginError{name: name}
	}
	return k, nil
}

type unknownPluginError struct{ name string }

func (e *unknownPluginError) Error() string { return ErrUnknownPlugin.Error() + ": " + e.name }
func (e *unknownPluginError) Unwrap() error { return ErrUnknownPlugin }

// Execute runs req on its plugin, starting the child if needed, and calls onRows with
// each batch of rows as it arrives. The error, when not nil, is one of the typed
// errors of this package (or the context's).
func (s *Supervisor) Execute(ctx context.Context, req Request, onRows func([]string) error) (sdk.Result, error) {
	k, err := s.keeper(req.Plugin)
	if err != nil {
		return sdk.Result{}, err
	}
	return k.execute(ctx, req, onRows)
}

// Describe returns the manifest of a plugin: while it runs or is idle, the one its
// last child gave (an idle plugin is not started to be described); else it starts it.
func (s *Supervisor) Describe(ctx context.Context, plugin string) (host.Manifest, error) {
	k, err := s.keeper(plugin)
	if err != nil {
		return host.Manifest{}, err
	}
	if m, ok := k.known(); ok {
		return m, nil
	}
	c, err := k.acquire(ctx)
	if err != nil {
		return host.Manifest{}, err
	}
	defer k.release(c)
	return c.Manifest(), nil
}

// Start starts every plugin that may run and waits until each is running or has
// failed to start. Failures show in Status.
func (s *Supervisor) Start(ctx context.Context) {
	var wg sync.WaitGroup
	for _, k := range s.list() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c, err := k.acquire(ctx); err == nil {
				k.release(c)
			}
		}()
	}
	wg.Wait()
}

// Plugins returns the names of the plugins in the plugin dir, sorted, refused ones
// included.
func (s *Supervisor) Plugins() []string {
	var names []string
	for _, k := range s.list() {
		names = append(names, k.name)
	}
	return names
}

// Has reports whether the plugin dir has a plugin of that name (refused or not).
func (s *Supervisor) Has(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.keepers[name]
	return ok
}

// list returns the keepers sorted by name.
func (s *Supervisor) list() []*keeper {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listLocked()
}

func (s *Supervisor) listLocked() []*keeper {
	out := make([]*keeper, 0, len(s.keepers))
	for _, k := range s.keepers {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// Status returns every plugin's status, sorted by name.
func (s *Supervisor) Status() []Status {
	var out []Status
	for _, k := range s.list() {
		out = append(out, k.status())
	}
	return out
}

// Close stops every child, waits for them to exit, and ends the subscriptions.
func (s *Supervisor) Close() {
	s.mu.Lock()
	s.closed = true
	all := s.listLocked()
	for k := range s.draining {
		all = append(all, k)
	}
	s.mu.Unlock()
	if f, ok := s.launcher.(interface{ forgetImages() }); ok {
		f.forgetImages()
	}
	var wg sync.WaitGroup
	for _, k := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k.stop()
		}()
	}
	wg.Wait()
	if closer, ok := s.launcher.(interface{ close() }); ok {
		closer.close()
	}
	s.mu.Lock()
	for sub := range s.subs {
		sub.end()
		delete(s.subs, sub)
	}
	s.mu.Unlock()
}

// subscriber receives state changes on a buffered channel. A subscriber that falls
// more than its buffer behind loses changes rather than stalling the plugins; it learns
// how many from Dropped, and Status stays authoritative.
type subscriber struct {
	ch      chan StateChange
	dropped atomic.Int64
	once    sync.Once
}

func (sub *subscriber) end() { sub.once.Do(func() { close(sub.ch) }) }

// Subscription is a stream of state changes; see Subscribe.
type Subscription struct {
	// C delivers every state change of every plugin, in order per plugin, and is
	// closed by Cancel or by the supervisor's Close.
	C   <-chan StateChange
	sub *subscriber
	s   *Supervisor
}

// Dropped is how many changes were lost because C was full.
func (sb *Subscription) Dropped() int64 { return sb.sub.dropped.Load() }

// Cancel ends the subscription and closes C.
func (sb *Subscription) Cancel() {
	sb.s.mu.Lock()
	delete(sb.s.subs, sb.sub)
	sb.s.mu.Unlock()
	sb.sub.end()
}

// Subscribe pushes every state change from now on to a channel holding up to buffer
// changes (at least 1), for a caller that reacts to transitions as they happen rather
// than polling Status. A caller that only counts (metrics) reads Status instead,
// which misses nothing however slowly it reads.
func (s *Supervisor) Subscribe(buffer int) *Subscription {
	sub := &subscriber{ch: make(chan StateChange, max(buffer, 1))}
	s.mu.Lock()
	if s.closed {
		sub.end()
	} else {
		s.subs[sub] = struct{}{}
	}
	s.mu.Unlock()
	return &Subscription{C: sub.ch, sub: sub, s: s}
}

// publish hands a change to every subscriber without ever blocking a keeper.
func (s *Supervisor) publish(c StateChange) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for sub := range s.subs {
		select {
		case sub.ch <- c:
		default:
			sub.dropped.Add(1)
		}
	}
}
