package supervisor

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

// procRunner runs one plugin child for go-plugin (it implements go-plugin's
// runner.Runner) and owns the process: the group everything it starts belongs to, its
// exit (noticed by waiting on the process itself, never by polling), how it ended, and
// the relay of its stderr into the agent's log.
type procRunner struct {
	cmd   *exec.Cmd
	name  string // the binary's path, for messages
	img   *image
	log   hclog.Logger // the plugin's log, named after it
	onRun func(pid int)
	onEnd func()
	// socketDir is the directory go-plugin made for this child's socket.
	socketDir string

	stdout io.ReadCloser
	stderr io.ReadCloser
	group  *proctree.Group
	box    *limits.Box // nil: no resource limits

	reaped chan struct{} // closed as soon as the process is reaped (Kill)
	exited chan struct{} // closed once everything after the exit is done (Wait)
	mu     sync.Mutex
	state  *os.ProcessState
	werr   error
}

func (r *procRunner) Start(context.Context) error {
	var err error
	if r.stdout, err = r.cmd.StdoutPipe(); err != nil {
		return err
	}
	if r.stderr, err = r.cmd.StderrPipe(); err != nil {
		return err
	}
	if err := r.cmd.Start(); err != nil {
		r.img.release()
		r.box.StartFailed()
		return err
	}
	r.img.started()
	if err := r.box.Started(r.cmd.Process.Pid); err != nil {
		r.log.Warn("the child is not in every cgroup of its box", "error", err)
	}
	if r.group, err = proctree.Attach(r.cmd); err != nil {
		// Unbounded, it could leave processes behind: end it before it does anything.
		_ = r.cmd.Process.Kill()
		_, _ = r.cmd.Process.Wait()
		r.img.release()
		r.box.Close()
		return err
	}
	if r.onRun != nil {
		r.onRun(r.cmd.Process.Pid)
	}
	r.reaped = make(chan struct{})
	r.exited = make(chan struct{})
	go relayLog(r.stderr, r.log)
	go r.wait()
	return nil
}

// wait reaps the process as soon as it exits, records how, cleans up after it, and
// only then says it has exited (Wait): whoever waits for the child, such as the
// supervisor's Close, finds it gone from the launcher's live set and its box removed.
// Said first, a Close racing this goroutine saw a live child that no longer existed
// and read the whole process table for orphans on every one-shot exec. The output
// pipes get a moment to drain before they are closed.
func (r *procRunner) wait() {
	st, err := r.cmd.Process.Wait()
	r.mu.Lock()
	r.state, r.werr = st, err
	r.mu.Unlock()
	close(r.reaped)
	r.group.Close()
	r.img.release()
	// Whatever the child left in its box goes with it, also what left its group.
	r.box.Close()
	if r.onEnd != nil {
		r.onEnd()
	}
	close(r.exited)
	time.AfterFunc(pipeGrace, func() {
		r.stdout.Close()
		r.stderr.Close()
	})
}

// Wait returns once the process has exited. go-plugin calls it after its handshake
// reader is done.
func (r *procRunner) Wait(context.Context) error {
	if r.exited == nil {
		return errors.New("not started")
	}
	<-r.exited
	return nil
}

// Kill ends the process and everything it started, unless it has already exited (its
// pid, and with it the group id, may then belong to someone else).
func (r *procRunner) Kill(context.Context) error {
	if r.reaped == nil {
		return nil
	}
	select {
	case <-r.reaped:
		return nil
	default:
	}
	err := r.group.Kill()
	r.box.Kill()
	return err
}

func (r *procRunner) Stdout() io.ReadCloser { return r.stdout }

// Stderr is empty for go-plugin: the agent relays the plugin's stderr itself (relayLog),
// so that a hostile log line can neither crash the agent nor forge its log.
func (r *procRunner) Stderr() io.ReadCloser { return io.NopCloser(strings.NewReader("")) }

func (r *procRunner) Name() string { return r.name }

func (r *procRunner) Diagnose(context.Context) string {
	return "the file may not be a yuzu plugin built for this platform, or it failed before its handshake (see its log lines above)"
}

func (r *procRunner) ID() string {
	if r.cmd.Process == nil {
		return ""
	}
	return strconv.Itoa(r.cmd.Process.Pid)
}

func (r *procRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (r *procRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

// exitStatus says how the process ended, once it has.
func (r *procRunner) exitStatus() string {
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
