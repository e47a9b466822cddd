// Package supervisor keeps one managed child process per plugin: it verifies each
// binary before it runs, starts it through go-plugin with automatic mutual TLS, pings
// it, restarts it with exponential backoff inside a restart budget, marks it failed
// when the budget is spent, and kills it when a command outlives its deadline.
//
// Every plugin is a small state machine (stopped, starting, running, backoff, failed,
// refused); each transition is logged with its reason and shows in Status.
package supervisor

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
)

// Options configure a Supervisor. Zero values take the defaults of DECISIONS 32.
type Options struct {
	PluginDir    string
	DataDir      string
	AgentID      string
	AgentVersion string
	LogLevel     string
	Logger       hclog.Logger

	BackoffMin    time.Duration // first restart delay, doubled per restart: 100 ms
	BackoffMax    time.Duration // 30 s
	RestartBudget int           // restarts allowed within RestartWindow: 5
	RestartWindow time.Duration // 60 s
	FailedFor     time.Duration // how long a plugin stays failed: 5 min
	PingInterval  time.Duration // 10 s
	PingMisses    int           // consecutive failed pings that restart the child: 3
	Grace         time.Duration // past the deadline before the child is killed: 5 s
	StartTimeout  time.Duration // handshake, Describe and Configure: 10 s
}

func (o *Options) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.BackoffMin, 100*time.Millisecond)
	def(&o.BackoffMax, 30*time.Second)
	def(&o.RestartWindow, 60*time.Second)
	def(&o.FailedFor, 5*time.Minute)
	def(&o.PingInterval, 10*time.Second)
	def(&o.Grace, 5*time.Second)
	def(&o.StartTimeout, 10*time.Second)
	if o.RestartBudget <= 0 {
		o.RestartBudget = 5
	}
	if o.PingMisses <= 0 {
		o.PingMisses = 3
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
}

// Supervisor manages the plugins of one plugin directory.
type Supervisor struct {
	opts Options
	log  hclog.Logger

	mu        sync.Mutex
	instances map[string]*instance
	closed    bool
}

// New discovers the plugin binaries of opts.PluginDir. Nothing is started until a
// command needs it (or Start is called). Binaries that may not run are kept, refused,
// so that commands and Status can say why.
func New(opts Options) (*Supervisor, error) {
	opts.defaults()
	bins, err := discover(opts.PluginDir)
	if err != nil {
		return nil, err
	}
	s := &Supervisor{opts: opts, log: opts.Logger, instances: map[string]*instance{}}
	for _, name := range sortedNames(bins) {
		b := bins[name]
		inst := &instance{sup: s, bin: b, state: StateStopped}
		if b.refused != nil {
			inst.state = StateRefused
			inst.lastErr = b.refused.Error()
			s.log.Warn("plugin refused", "plugin", name, "reason", b.refused.Error())
		}
		s.instances[name] = inst
	}
	return s, nil
}

// Request is one command for a plugin.
type Request struct {
	ID     string
	Plugin string
	Action string
	Params map[string]string
	// Timeout is the command's allowed run time; Deadline, when set, is when it ends
	// (the submitter may have queued it for part of Timeout).
	Timeout  time.Duration
	Deadline time.Time
}

func (s *Supervisor) instance(name string) (*instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("agent is shutting down")
	}
	inst, ok := s.instances[name]
	if !ok {
		return nil, &unknownPluginError{name: name}
	}
	return inst, nil
}

type unknownPluginError struct{ name string }

func (e *unknownPluginError) Error() string { return ErrUnknownPlugin.Error() + ": " + e.name }
func (e *unknownPluginError) Unwrap() error { return ErrUnknownPlugin }

// Execute runs req on its plugin, starting the child if needed, and calls onRows with
// each batch of rows as it arrives. The error, when not nil, is one of the typed
// errors of this package (or the context's).
func (s *Supervisor) Execute(ctx context.Context, req Request, onRows func([]string) error) (sdk.Result, error) {
	inst, err := s.instance(req.Plugin)
	if err != nil {
		return sdk.Result{}, err
	}
	return inst.execute(ctx, req, onRows)
}

// Describe returns the manifest of a plugin, starting it if needed.
func (s *Supervisor) Describe(ctx context.Context, plugin string) (host.Manifest, error) {
	inst, err := s.instance(plugin)
	if err != nil {
		return host.Manifest{}, err
	}
	c, err := inst.acquire(ctx)
	if err != nil {
		return host.Manifest{}, err
	}
	return c.manifest, nil
}

// Start starts every plugin that may run and waits until each is running or has
// failed to start. Failures show in Status.
func (s *Supervisor) Start(ctx context.Context) {
	var wg sync.WaitGroup
	for _, inst := range s.list() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = inst.acquire(ctx)
		}()
	}
	wg.Wait()
}

func (s *Supervisor) list() []*instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*instance, 0, len(s.instances))
	for _, inst := range s.instances {
		out = append(out, inst)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].bin.name < out[j].bin.name })
	return out
}

// Status describes one plugin for `yuzu-agent plugins`.
type Status struct {
	Name      string
	Path      string
	State     State
	Version   string // empty until the plugin has run once
	Restarts  int
	LastError string
	Actions   []string
	Pid       int // 0 when not running
}

// Status returns every plugin's status, sorted by name.
func (s *Supervisor) Status() []Status {
	var out []Status
	for _, inst := range s.list() {
		out = append(out, inst.status())
	}
	return out
}

// Close stops every child and waits for them to exit.
func (s *Supervisor) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, inst := range s.list() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inst.stop()
		}()
	}
	wg.Wait()
}

func (s *Supervisor) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}
