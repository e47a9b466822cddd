package supervisor

import (
	"os"
	"os/exec"
)

// prepareCmd leaves the child as it is on Windows. Tying children to the agent with a
// Job Object is not built yet; the SDK side exits when its parent pid changes.
func prepareCmd(*exec.Cmd) {}

// killTree kills the child process.
func killTree(pid int) {
	if pid <= 0 {
		return
	}
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
