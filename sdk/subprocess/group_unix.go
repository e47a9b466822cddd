//go:build unix

package subprocess

import (
	"errors"
	"os/exec"
	"syscall"
)

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func rootDir() string { return "/" }

// prepare puts the tool in a new process group whose id is its pid, so one kill(-pgid)
// reaches everything it starts.
func prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

type group struct{ pgid int }

func newGroup(cmd *exec.Cmd) (*group, error) { return &group{pgid: cmd.Process.Pid}, nil }

// kill sends SIGKILL to the whole group. ESRCH means the group is already empty.
func (g *group) kill() error {
	err := syscall.Kill(-g.pgid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

func (g *group) close() {}
