package proctree

import (
	"os/exec"

	"golang.org/x/sys/unix"
)

func prepare(cmd *exec.Cmd, _ bool) { prepareUnix(cmd) }

// BecomeSubreaper is not available on macOS; orphans move to launchd.
func BecomeSubreaper() error { return ErrUnsupported }

// TieToSelf is a no-op on macOS: children watch their parent pid instead.
func TieToSelf() error { return nil }

// parentTable maps every pid in the kernel's process table to its parent pid.
func parentTable() map[int]int {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	table := make(map[int]int, len(procs))
	for _, p := range procs {
		table[int(p.Proc.P_pid)] = int(p.Eproc.Ppid)
	}
	return table
}

// hasChildren errs towards true on macOS: the walk of the process table decides.
func hasChildren() bool { return true }
