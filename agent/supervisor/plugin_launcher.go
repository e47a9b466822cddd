package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/yuzugo/yuzu/agent/internal/limits"
	"github.com/yuzugo/yuzu/agent/internal/proc"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
	"github.com/yuzugo/yuzu/sdk/proctree"
)

// pluginLauncher is the real Launcher: it verifies the binary (proc.ImageCache), runs exactly
// the verified bytes as a child through go-plugin with automatic mutual TLS, a clean
// environment and its own process group or job, then describes and configures it.
type pluginLauncher struct {
	log         hclog.Logger
	logLevel    hclog.Level
	reapOrphans bool
	boxes       *limits.Host
	limits      limits.Set
	// socketRoot holds the children's socket directories (proc.NewSocketRoot); "" leaves
	// go-plugin's default. It and boxes are set by prepare; ready is closed then.
	socketRoot string
	ready      chan struct{}

	// mu makes a start and an orphan sweep exclusive, so that a child that has just
	// been forked is always registered before a sweep could take it for an orphan.
	mu      sync.Mutex
	live    map[int]bool // pids of running plugin children
	reaping map[int]bool // orphans killed and not yet reaped

	// images keeps each plugin's verified image for its later starts.
	images proc.ImageCache
}

func newPluginLauncher(o Options) *pluginLauncher {
	l := &pluginLauncher{log: o.Logger, logLevel: hclog.LevelFromString(o.LogLevel), reapOrphans: o.ReapOrphans, live: map[int]bool{}, reaping: map[int]bool{}}
	if l.reapOrphans {
		if err := proctree.BecomeSubreaper(); err != nil && !errors.Is(err, proctree.ErrUnsupported) {
			l.log.Warn("cannot adopt orphaned plugin descendants", "error", err)
		}
	}
	if err := proctree.TieToSelf(); err != nil {
		l.log.Warn("cannot tie plugin processes to the agent's lifetime", "error", err)
	}
	if o.DataDir != "" {
		// A start of a binary unchanged since its last verification copies it
		// without hashing it again (proc.ImageCache); the records are the agent's
		// alone, in the data dir.
		l.images.RecordDir = filepath.Join(o.DataDir, "verified")
	}
	l.limits = o.Limits
	if l.limits.Default == (limits.Limits{}) {
		l.limits.Default = limits.Default
	}
	// The socket root and the boxes' cgroup directories take a few milliseconds of
	// system calls that nothing needs before the first start: made in the
	// background, they overlap the rest of the agent's start and the first hash.
	l.ready = make(chan struct{})
	go l.prepare()
	return l
}

// prepare makes the socket root and the host of the boxes, then closes l.ready.
func (l *pluginLauncher) prepare() {
	defer close(l.ready)
	// Windows' plugins listen on loopback TCP: no socket, nothing left in TMPDIR.
	if hostOS != "windows" {
		l.socketRoot = proc.NewSocketRoot(l.log)
	}
	l.boxes = limits.New()
	// Said once: every start would repeat it.
	if why := l.boxes.Unavailable(); why != "" {
		l.log.Warn("plugin resource limits are not (all) applied", "reason", why, "boxes", l.boxes.Where())
	} else {
		l.log.Debug("plugin resource limits", "boxes", l.boxes.Where())
	}
}

// goPluginLog is the logger handed to go-plugin. The agent logs every start, exit and
// kill itself, with reasons, so go-plugin's own lifecycle lines only show when the
// agent is debugging; the plugins' log lines do not go through it (proc.Runner relays them).
func (l *pluginLauncher) goPluginLog() hclog.Logger {
	if l.logLevel == hclog.Trace || l.logLevel == hclog.Debug {
		return l.log.Named("go-plugin")
	}
	return hclog.NewNullLogger()
}

func (l *pluginLauncher) Launch(ctx context.Context, b Binary, cfg sdk.Config) (Child, error) {
	// The time of each step, logged at debug once the child is up: the cold-exec
	// benchmark (scripts/bench-cold-exec.sh) reports their shares from this line.
	// tls_ms is what the box and the mutual TLS took beyond the hash they overlap.
	t0 := time.Now()
	cc := host.ClientConfig(nil) // no Cmd: RunnerFunc below starts the verified image
	// The child's box (its cgroup directories and limits, a few milliseconds of
	// system calls on a hybrid host) and its TLS certificate do not depend on the
	// binary: they are made on another core while this one hashes it. A binary that
	// is refused leaves its box unused, and it is removed.
	var (
		box            *limits.Box
		boxErr, tlsErr error
		tlsEnv         []string
		prepared       = make(chan struct{})
	)
	go func() {
		defer close(prepared)
		<-l.ready
		box, boxErr = l.boxes.Box(b.Name, l.limits.For(b.Name))
		tlsEnv, tlsErr = host.MutualTLS(cc)
	}()
	img, err := l.images.Open(b.Name, b.Path, b.Checksum)
	tHash := time.Now()
	<-prepared
	if err != nil {
		box.StartFailed()
		return nil, err
	}
	pr := &proc.Runner{Path: b.Path, Image: img, Log: l.log.Named(b.Name), Box: box}
	if boxErr != nil {
		// Today's behaviour rather than no plugin: the log says so.
		pr.Log.Warn("this child runs without resource limits", "error", boxErr)
	}
	pr.OnRun = func(pid int) { l.live[pid] = true } // under l.mu, see below
	pr.OnEnd = func() { l.ended(pr) }
	if tlsErr != nil {
		img.Release()
		pr.Box.StartFailed()
		return nil, &StartError{Plugin: b.Name, Err: fmt.Errorf("mutual TLS: %w", tlsErr)}
	}
	tTLS := time.Now()
	cc.Logger = l.goPluginLog()
	// go-plugin's own stderr reader only ever sees the empty stream proc.Runner gives
	// it (the agent relays stderr itself): a minimal buffer instead of its 64 KiB.
	cc.PluginLogBufferSize = 16
	cc.SyncStdout = proc.LogWriter(pr.Log, "stdout")
	cc.SyncStderr = proc.LogWriter(pr.Log, "stderr")
	if d, ok := ctx.Deadline(); ok {
		cc.StartTimeout = time.Until(d)
	}
	if l.socketRoot != "" {
		cc.UnixSocketConfig = &plugin.UnixSocketConfig{TempDir: l.socketRoot}
	}
	cc.RunnerFunc = func(_ hclog.Logger, spec *exec.Cmd, socketDir string) (runner.Runner, error) {
		pr.SocketDir = socketDir
		// spec carries only go-plugin's variables (handshake cookie, socket
		// directory); the child gets those, its TLS (tlsEnv) and the allow-listed few
		// of ours.
		pr.Cmd = &exec.Cmd{
			Path: img.ExecPath(),
			Args: []string{b.Path},
			Env:  append(append(proc.ChildEnv(os.Environ(), hostOS), spec.Env...), tlsEnv...),
		}
		proctree.Prepare(pr.Cmd, true)
		pr.Box.Prepare(pr.Cmd)
		return lockedStart{pr, &l.mu}, nil
	}
	client := plugin.NewClient(cc)
	cp, err := client.Client()
	if err != nil {
		client.Kill()
		if pr.Cmd == nil || pr.Exited() == nil {
			img.Release()
			pr.Box.StartFailed()
		}
		return nil, &StartError{Plugin: b.Name, Err: err}
	}
	tStart := time.Now()
	c := &pluginChild{client: client, runner: pr}
	fail := func(err error) (Child, error) {
		_ = pr.Kill(context.Background())
		client.Kill()
		return nil, &StartError{Plugin: b.Name, Err: err}
	}
	if c.rpc, err = host.Dispense(cp); err != nil {
		return fail(err)
	}
	if c.manifest, err = c.rpc.Describe(ctx); err != nil {
		return fail(fmt.Errorf("describe: %w", err))
	}
	tDescribe := time.Now()
	c.manifest.Protocol = client.NegotiatedVersion()
	if c.manifest.Name != b.Name {
		return fail(fmt.Errorf("binary %s says its name is %q", b.Path, c.manifest.Name))
	}
	if err := c.rpc.Configure(ctx, cfg); err != nil {
		return fail(fmt.Errorf("configure: %w", err))
	}
	// Its limits hold before it runs any command (proc.Runner.Start).
	pr.Boxed()
	if pr.Log.IsDebug() {
		end := time.Now()
		pr.Log.Debug("plugin launch steps", "pid", c.Pid(),
			"hash_ms", ms(tHash.Sub(t0)), "tls_ms", ms(tTLS.Sub(tHash)), "start_ms", ms(tStart.Sub(tTLS)),
			"describe_ms", ms(tDescribe.Sub(tStart)), "configure_ms", ms(end.Sub(tDescribe)), "total_ms", ms(end.Sub(t0)))
	}
	return c, nil
}

// ms writes a duration in milliseconds with microsecond precision, for the launch
// steps line.
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 3, 64)
}

// lockedStart starts the child while holding the launcher's lock (see pluginLauncher.mu).
type lockedStart struct {
	*proc.Runner
	mu *sync.Mutex
}

func (s lockedStart) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Runner.Start(ctx)
}

// ended forgets a child that has exited and, when the agent adopts orphans, kills
// whatever that child left behind.
func (l *pluginLauncher) ended(pr *proc.Runner) {
	// Its socket is of no use to anyone now, however it ended.
	proc.RemoveSocketDir(l.socketRoot, pr.SocketDir)
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.live, pr.Cmd.Process.Pid)
	if l.reapOrphans {
		proc.SweepOrphans(l.live, l.reaping, &l.mu, l.log)
	}
}

// forgetImages gives back the kept images when the supervisor starts to close: each is
// freed as its last child exits, beside the rest of the stop (proc.ImageCache.Forget).
func (l *pluginLauncher) forgetImages() { l.images.Forget() }

// close runs a last sweep when the supervisor closes.
func (l *pluginLauncher) close() {
	// The supervisor gave the kept images back before it stopped the children
	// (forgetImages): their memory files (3 to 4 ms each to free for a shipped plugin)
	// are freed in the background while the boxes' directories and the socket root
	// are removed; close returns once all of it is done.
	defer l.images.Close()
	<-l.ready
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reapOrphans {
		proc.SweepOrphans(l.live, l.reaping, &l.mu, l.log)
	}
	l.boxes.Close()
	if l.socketRoot != "" {
		_ = os.RemoveAll(l.socketRoot)
	}
}

// pluginChild is a running plugin process.
type pluginChild struct {
	client   *plugin.Client
	runner   *proc.Runner
	rpc      *host.Client
	manifest host.Manifest
}

func (c *pluginChild) Manifest() host.Manifest { return c.manifest }

func (c *pluginChild) Execute(ctx context.Context, cmd host.Command, onRows func([]string) error) (sdk.Result, error) {
	return c.rpc.Execute(ctx, cmd, onRows)
}

func (c *pluginChild) Ping(timeout time.Duration) error {
	cp, err := c.client.Client()
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- cp.Ping() }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-errc:
		return err
	case <-t.C:
		return fmt.Errorf("no answer within %s", Seconds(timeout))
	case <-c.runner.Exited():
		return errors.New("process exited")
	}
}

func (c *pluginChild) Exited() <-chan struct{} { return c.runner.Exited() }

func (c *pluginChild) ExitStatus() string { return c.runner.ExitStatus() }

// Kill ends the process tree at once, then lets go-plugin release the connection.
func (c *pluginChild) Kill() {
	_ = c.runner.Kill(context.Background())
	go c.client.Kill()
}

// Stop closes the connection (the plugin takes it as the signal to stop) and kills the
// process if it has not exited within grace.
func (c *pluginChild) Stop(grace time.Duration) {
	go c.client.Kill()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.runner.Exited():
	case <-t.C:
		_ = c.runner.Kill(context.Background())
		<-c.runner.Exited()
	}
}

func (c *pluginChild) Pid() int { return c.runner.Cmd.Process.Pid }

// Box is the child's box with resource limits, nil when it has none.
func (c *pluginChild) Box() *limits.Box { return c.runner.Box }
