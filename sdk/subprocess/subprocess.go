// Package subprocess runs an external tool with hard bounds, for plugins that must ask
// a system tool (ufw, iptables, codesign) for an answer.
//
// The rules, from the upstream runner the shipped plugins replace:
//
//   - argv[0] must be an absolute path; there is no PATH search and no shell, so a
//     parameter can never become a command;
//   - the tool runs in its own process group (Windows: its own process group and a job
//     object), and when the deadline passes or the caller's context ends the whole
//     group is killed, grandchildren too;
//   - stdout is captured up to a cap; output beyond the cap is read and thrown away so
//     the tool never blocks on a full pipe, and the result says it was truncated;
//   - stderr is discarded unless MergeStderr asks for it in the same buffer;
//   - the environment is a clean slate (DefaultEnv) and the working directory is the
//     root of the filesystem, so the answer does not depend on where the agent was
//     started or what its environment held.
package subprocess

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/yuzugo/yuzu/sdk/proctree"
)

// Defaults applied when a Spec leaves a bound at zero.
const (
	DefaultTimeout   = 10 * time.Second
	DefaultMaxOutput = 1_000_000
)

// pipeGrace bounds how long Run waits for the output pipe to close after the tool
// itself has exited. A process that escaped the group (setsid) and still holds the
// pipe is not waited for longer than this.
const pipeGrace = time.Second

// Reason says how a run ended.
type Reason string

// Reasons, with the upstream runner's names.
const (
	// ReasonExited: the tool exited by itself; ExitCode holds its status.
	ReasonExited Reason = "exited"
	// ReasonSignaled: the tool was killed by a signal Run did not send.
	ReasonSignaled Reason = "signaled"
	// ReasonDeadline: Spec.Timeout passed and Run killed the process group.
	ReasonDeadline Reason = "deadline"
	// ReasonCancelled: the caller's context ended and Run killed the process group.
	ReasonCancelled Reason = "cancelled"
	// ReasonSpawnError: the tool never ran (bad Spec, missing binary, context
	// already done).
	ReasonSpawnError Reason = "spawn_error"
)

// Spec describes one run.
type Spec struct {
	// Argv is the command line. Argv[0] must be an absolute path to the tool.
	Argv []string
	// Timeout is the hard wall-clock bound; zero or negative means DefaultTimeout.
	Timeout time.Duration
	// MaxOutput caps the captured bytes; zero or negative means DefaultMaxOutput.
	MaxOutput int
	// MergeStderr captures stderr into the same buffer as stdout, interleaved as the
	// tool wrote it. Otherwise stderr is discarded.
	MergeStderr bool
	// Env is the tool's whole environment. Nil means DefaultEnv(); an empty non-nil
	// slice means an empty environment.
	Env []string
	// Dir is the working directory; empty means the filesystem root.
	Dir string
}

// Result is what a run produced.
type Result struct {
	// ToolRan is true when the tool was started.
	ToolRan bool
	// ExitCode is the tool's exit status when Reason is ReasonExited, else -1.
	ExitCode int
	// TimedOut is true when Spec.Timeout passed (Reason is ReasonDeadline).
	TimedOut bool
	// OutputTruncated is true when the tool wrote more than MaxOutput bytes.
	OutputTruncated bool
	// Output holds at most MaxOutput bytes of what the tool wrote.
	Output []byte
	Reason Reason
}

// Complete reports whether the tool ran to its own end and all it wrote is in Output:
// it exited by itself (it was not killed, at its deadline or otherwise, and did not fail
// to start) and did not write past the output cap. What its exit status means is the
// caller's to judge.
func (r Result) Complete() bool { return r.Reason == ReasonExited && !r.OutputTruncated }

// ErrRelativePath is wrapped by Run's error when argv[0] is not absolute.
var ErrRelativePath = errors.New("tool path must be absolute")

// DefaultEnv is the environment a tool gets when Spec.Env is nil: a fixed system PATH
// (the tool is named by absolute path; the PATH only serves tools that call others),
// LC_ALL=C and LANG=C so messages and number formats are the untranslated ones parsers
// expect, and the plugin's own TZ when it has one.
func DefaultEnv() []string {
	env := []string{"PATH=" + defaultPath, "LC_ALL=C", "LANG=C"}
	if tz, ok := os.LookupEnv("TZ"); ok {
		env = append(env, "TZ="+tz)
	}
	return env
}

// Run starts the tool described by spec and waits until it ends, its timeout passes
// or ctx ends, whichever comes first.
//
// The error is non-nil exactly when the tool did not run (Result.ToolRan false,
// Reason ReasonSpawnError): an invalid Spec, a tool that cannot be executed (the error
// then wraps the system's, e.g. fs.ErrNotExist), or ctx already done. A tool that ran
// and failed, was killed or timed out is not an error: the Result says what happened.
func Run(ctx context.Context, spec Spec) (Result, error) {
	res := Result{ExitCode: -1, Reason: ReasonSpawnError}
	if len(spec.Argv) == 0 {
		return res, errors.New("subprocess: empty argv")
	}
	if !filepath.IsAbs(spec.Argv[0]) {
		return res, fmt.Errorf("subprocess: %q: %w", spec.Argv[0], ErrRelativePath)
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("subprocess: %s: %w", spec.Argv[0], err)
	}
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	limit := spec.MaxOutput
	if limit <= 0 {
		limit = DefaultMaxOutput
	}

	// exec.Command would search PATH for a bare name; Argv[0] is absolute, so Path is
	// used as given.
	cmd := &exec.Cmd{Path: spec.Argv[0], Args: spec.Argv, Dir: spec.Dir, Env: spec.Env}
	if cmd.Env == nil {
		cmd.Env = DefaultEnv()
	}
	if cmd.Dir == "" {
		cmd.Dir = rootDir()
	}
	out := &cappedBuffer{limit: limit}
	cmd.Stdout = out
	if spec.MergeStderr {
		cmd.Stderr = out // the same comparable writer: exec serialises the writes
	}
	cmd.WaitDelay = pipeGrace
	// A parent-death signal too: if the plugin dies mid-run, the tool dies with it.
	proctree.Prepare(cmd, true)

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("subprocess: start %s: %w", spec.Argv[0], err)
	}
	res.ToolRan = true
	g, gerr := proctree.Attach(cmd)
	if gerr != nil {
		// The tool started but cannot be bounded as a group: kill it at once rather
		// than let it run unbounded, and report that it did not run.
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		res.ToolRan = false
		return res, fmt.Errorf("subprocess: bound %s: %w", spec.Argv[0], gerr)
	}
	defer g.Close()

	// The watcher kills the group when the deadline passes or ctx ends. It must stop
	// before the leader is reaped: after that the group id may name someone else's
	// processes.
	var killed Reason
	stop := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-runCtx.Done():
			if ctx.Err() != nil {
				killed = ReasonCancelled
			} else {
				killed = ReasonDeadline
			}
			_ = g.Kill()
		case <-stop:
		}
	}()
	stopWatcher := sync.OnceFunc(func() { close(stop); <-stopped })

	if awaitExit(cmd.Process.Pid) {
		// The leader has exited but is not reaped, so the group id is still ours:
		// stop the watcher, then kill whatever the tool left behind in its group.
		stopWatcher()
		_ = g.KillLeftovers()
	}
	werr := cmd.Wait()
	stopWatcher()

	res.Output = out.bytes()
	res.OutputTruncated = out.truncated
	st := cmd.ProcessState
	switch {
	case killed != "":
		res.Reason = killed
		res.TimedOut = killed == ReasonDeadline
	case st != nil && st.Exited():
		res.Reason = ReasonExited
		res.ExitCode = st.ExitCode()
	default:
		res.Reason = ReasonSignaled
	}
	// werr adds nothing here: a non-zero exit is in ExitCode, and exec.ErrWaitDelay only
	// means a process outside the group kept the pipe open past pipeGrace.
	_ = werr
	return res, nil
}

// cappedBuffer keeps the first limit bytes written to it and counts the rest as
// truncated, always reporting a full write so the copier keeps draining the pipe.
type cappedBuffer struct {
	mu        sync.Mutex
	limit     int
	buf       []byte
	truncated bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.limit - len(c.buf)
	if room >= len(p) {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	if room > 0 {
		c.buf = append(c.buf, p[:room]...)
	}
	c.truncated = true
	return len(p), nil
}

func (c *cappedBuffer) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf
}
