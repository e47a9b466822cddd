package proc

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/internal/limits"
	"github.com/yuzugo/yuzu/sdk/proctree"
)

// pipeGrace is how long the agent keeps reading a child's output pipes after the child
// has exited: long enough for its last lines, short enough that a grandchild holding a
// pipe open cannot keep the child's end unnoticed.
const pipeGrace = time.Second

// Runner runs one plugin child for go-plugin (it implements go-plugin's
// runner.Runner) and owns the process: the group everything it starts belongs to, its
// exit (noticed by waiting on the process itself, never by polling), how it ended, and
// the relay of its stderr into the agent's log.
type Runner struct {
	Cmd   *exec.Cmd    // the child to start, set before Start
	Path  string       // the binary's path, for messages
	Image *Image       // the verified image Cmd runs; released once the child has exited
	Log   hclog.Logger // the plugin's log, named after it
	// OnRun, when set, is called with the child's pid once it runs, inside Start.
	OnRun func(pid int)
	// OnEnd, when set, is called once the child has exited, before Wait returns.
	OnEnd func()
	// SocketDir is the directory go-plugin made for this child's socket.
	SocketDir string
	Box       *limits.Box // nil: no resource limits

	stdout io.ReadCloser
	stderr io.ReadCloser
	group  *proctree.Group

	boxed  chan struct{} // closed once the child has joined its box's v1 cgroups
	reaped chan struct{} // closed as soon as the process is reaped (Kill)
	exited chan struct{} // closed once everything after the exit is done (Wait)
	mu     sync.Mutex
	state  *os.ProcessState
	werr   error
}

func (r *Runner) Start(context.Context) error {
	var err error
	if r.stdout, err = r.Cmd.StdoutPipe(); err != nil {
		return err
	}
	if r.stderr, err = r.Cmd.StderrPipe(); err != nil {
		return err
	}
	if err := r.Cmd.Start(); err != nil {
		r.Image.Release()
		r.Box.StartFailed()
		return err
	}
	r.Image.started()
	// Joining a v1 cgroup (a hybrid host) makes the kernel wait out an RCU grace
	// period, 10 ms and more on a busy machine: done here it held up the handshake
	// by about as long as the child takes to start, on every start. So the child
	// joins while it starts and go-plugin reads its handshake; the launcher waits for
	// it (Boxed) before the child is handed any command. The child was outside those
	// cgroups for as long before (it runs from the fork on); in the v2 one it is from
	// the fork. The process is not reaped before it has joined (wait), so its pid
	// cannot be another process's by then.
	r.boxed = make(chan struct{})
	go func(pid int) {
		defer close(r.boxed)
		if err := r.Box.Started(pid); err != nil {
			r.Log.Warn("the child is not in every cgroup of its box", "error", err)
		}
	}(r.Cmd.Process.Pid)
	if r.group, err = proctree.Attach(r.Cmd); err != nil {
		// Unbounded, it could leave processes behind: end it before it does anything.
		_ = r.Cmd.Process.Kill()
		<-r.boxed
		_, _ = r.Cmd.Process.Wait()
		r.Image.Release()
		r.Box.Close()
		return err
	}
	if r.OnRun != nil {
		r.OnRun(r.Cmd.Process.Pid)
	}
	r.reaped = make(chan struct{})
	r.exited = make(chan struct{})
	go relayLog(r.stderr, r.Log)
	go r.wait()
	return nil
}

// wait reaps the process as soon as it exits, records how, cleans up after it, and
// only then says it has exited (Wait): whoever waits for the child, such as the
// supervisor's Close, finds it gone from the launcher's live set and its box removed.
// Said first, a Close racing this goroutine saw a live child that no longer existed
// and read the whole process table for orphans on every one-shot exec. The output
// pipes get a moment to drain before they are closed.
func (r *Runner) wait() {
	<-r.boxed
	st, err := r.Cmd.Process.Wait()
	r.mu.Lock()
	r.state, r.werr = st, err
	r.mu.Unlock()
	close(r.reaped)
	r.group.Close()
	r.Image.Release()
	// Whatever the child left in its box goes with it, also what left its group.
	r.Box.Close()
	if r.OnEnd != nil {
		r.OnEnd()
	}
	close(r.exited)
	time.AfterFunc(pipeGrace, func() {
		r.stdout.Close()
		r.stderr.Close()
	})
}

// Boxed returns once the started child has joined its box (every cgroup it could
// join): the launcher hands it no command before.
func (r *Runner) Boxed() {
	if r.boxed != nil {
		<-r.boxed
	}
}

// Wait returns once the process has exited. go-plugin calls it after its handshake
// reader is done.
func (r *Runner) Wait(context.Context) error {
	if r.exited == nil {
		return errors.New("not started")
	}
	<-r.exited
	return nil
}

// Kill ends the process and everything it started, unless it has already exited (its
// pid, and with it the group id, may then belong to someone else).
func (r *Runner) Kill(context.Context) error {
	if r.reaped == nil {
		return nil
	}
	select {
	case <-r.reaped:
		return nil
	default:
	}
	err := r.group.Kill()
	r.Box.Kill()
	return err
}

func (r *Runner) Stdout() io.ReadCloser { return r.stdout }

// Stderr is empty for go-plugin: the agent relays the plugin's stderr itself (relayLog),
// so that a hostile log line can neither crash the agent nor forge its log.
func (r *Runner) Stderr() io.ReadCloser { return io.NopCloser(strings.NewReader("")) }

func (r *Runner) Name() string { return r.Path }

func (r *Runner) Diagnose(context.Context) string {
	return "the file may not be a yuzu plugin built for this platform, or it failed before its handshake (see its log lines above)"
}

func (r *Runner) ID() string {
	if r.Cmd.Process == nil {
		return ""
	}
	return strconv.Itoa(r.Cmd.Process.Pid)
}

func (r *Runner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (r *Runner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

// Exited is closed once the process has exited and everything after the exit is done;
// nil before it has started.
func (r *Runner) Exited() <-chan struct{} { return r.exited }

// ExitStatus says how the process ended, once it has.
func (r *Runner) ExitStatus() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == nil {
		if r.werr != nil {
			return "unknown exit: " + r.werr.Error()
		}
		return "still running"
	}
	return describeExit(r.state)
}
