//go:build unix && !linux

package supervisor

import (
	"os/exec"
	"syscall"
)

// prepareCmd puts the child in its own process group. There is no parent-death signal
// outside Linux; the SDK side polls its parent pid and exits when the agent is gone.
func prepareCmd(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killTree kills the child's whole process group.
func killTree(pid int) {
	if pid <= 0 {
		return
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
