//go:build unix

package proctree

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

type sysGroup struct{ pgid int }

func attach(p *os.Process) (*sysGroup, error) { return &sysGroup{pgid: p.Pid}, nil }

func (g *sysGroup) kill(p *os.Process) error {
	// The descendants first, while their parents still hold them in place: a
	// killed parent's children move to another parent, but the walk below is done
	// before that matters because it collects the whole tree in one pass.
	descendants := Descendants(g.pgid)
	err := syscall.Kill(-g.pgid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		err = nil
	}
	for _, pid := range descendants {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if kerr := p.Kill(); kerr != nil && !errors.Is(kerr, os.ErrProcessDone) && err == nil {
		err = kerr
	}
	return err
}

func (g *sysGroup) killLeftovers(*os.Process) error {
	if err := syscall.Kill(-g.pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

func (*sysGroup) close() {}

// KillDescendants sends SIGKILL to every descendant of pid found in the process table,
// repeating the walk a few times to catch processes forked while it ran. It does not
// kill pid itself. For the calling process without any child it costs one system call.
func KillDescendants(pid int) {
	if pid == os.Getpid() && !hasChildren() {
		return
	}
	for range 3 {
		ds := Descendants(pid)
		if len(ds) == 0 {
			return
		}
		for _, d := range ds {
			_ = syscall.Kill(d, syscall.SIGKILL)
		}
	}
}

// HasChildren reports whether the calling process has any child, live or not yet
// reaped. Where the system cannot tell cheaply it answers true.
func HasChildren() bool { return hasChildren() }

// Descendants returns the pids of every process below pid in the parent tree, as the
// process table shows it at one moment. It returns nil when the table cannot be read.
func Descendants(pid int) []int { return Snapshot().Descendants(pid) }

// Table is the process table's parent links at one moment.
type Table struct {
	children map[int][]int
}

// Snapshot reads the process table once. An unreadable table gives an empty Table.
func Snapshot() *Table {
	t := &Table{children: map[int][]int{}}
	for child, parent := range parentTable() {
		t.children[parent] = append(t.children[parent], child)
	}
	return t
}

// Children returns the pids whose parent is pid.
func (t *Table) Children(pid int) []int { return t.children[pid] }

// Descendants returns the pids of every process below pid.
func (t *Table) Descendants(pid int) []int {
	children := t.children
	var out []int
	queue := []int{pid}
	seen := map[int]bool{pid: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

func prepareUnix(cmd *exec.Cmd) *syscall.SysProcAttr {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	return cmd.SysProcAttr
}
