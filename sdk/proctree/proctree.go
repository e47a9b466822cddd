// Package proctree starts processes so that everything they start can be ended with
// them, on every operating system the agent runs on. The supervisor uses it for
// plugin children and package subprocess for the tools plugins run; a plugin author
// rarely needs it directly.
//
//   - Unix: the process gets its own process group (its pid), so one kill(-pgid)
//     reaches everything it started that stayed in the group; Linux also gives it a
//     parent-death signal. Descendants that left the group (setsid, or a tool's own
//     group) are found by walking the process table (Descendants).
//   - Windows: the process is put in a job object with kill-on-close, so terminating
//     the job, or closing its last handle, ends every process in it.
//
// A process can also make itself the owner of its orphans (BecomeSubreaper on Linux)
// and tie itself and all its future children to its own lifetime (TieToSelf on
// Windows).
package proctree

import (
	"errors"
	"os"
	"os/exec"
)

// ErrUnsupported is returned where the operating system offers no way to keep the
// promise of this package.
var ErrUnsupported = errors.New("process trees are not supported on this platform")

// Group is a started process and everything it starts.
type Group struct {
	proc *os.Process
	sys  *sysGroup
}

// Prepare sets cmd up to start in its own group (Unix: process group; Windows: new
// console process group, started suspended: it runs once Attach has put it in its
// job, so on Windows every Start of a prepared command must be followed by Attach, or
// by a kill). deathSignal, when true, also asks Linux to kill the process
// if the goroutine's OS thread that started it exits; leave it false unless the caller
// owns the process's whole life. Call it before cmd.Start.
func Prepare(cmd *exec.Cmd, deathSignal bool) { prepare(cmd, deathSignal) }

// Attach binds a started command (prepared with Prepare) to a Group. On Windows it puts
// the suspended process in a fresh kill-on-close job and then lets it run, so nothing
// it starts can escape the job, and a tool that would have been done in a moment is
// still there to be assigned.
func Attach(cmd *exec.Cmd) (*Group, error) {
	if cmd.Process == nil {
		return nil, errors.New("proctree: command not started")
	}
	sys, err := attach(cmd.Process)
	if err != nil {
		return nil, err
	}
	return &Group{proc: cmd.Process, sys: sys}, nil
}

// Kill ends the whole group at once: the process, everything still in its group or
// job, and (on Unix) every descendant found in the process table. It is safe to call
// more than once, and after the process has exited but before it was reaped; once the
// process has been reaped its pid may belong to someone else, so do not call it then.
func (g *Group) Kill() error { return g.sys.kill(g.proc) }

// KillLeftovers ends what is still in the group or job once the process itself has
// exited but is not yet reaped. Unlike Kill it does not walk the process table: the
// exited process's own children have already been handed to another parent, so such a
// walk would find nothing and costs a read of every process on the machine.
func (g *Group) KillLeftovers() error { return g.sys.killLeftovers(g.proc) }

// Close releases what the Group holds (on Windows the job handle, which ends any
// process still in the job).
func (g *Group) Close() { g.sys.close() }
