package supervisor

import (
	"os/exec"
	"syscall"
)

// prepareCmd makes the child die with the agent (parent-death signal) and puts it in
// its own process group, so a kill reaches anything it started too.
func prepareCmd(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killTree kills the child's whole process group.
func killTree(pid int) {
	if pid <= 0 {
		return
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
