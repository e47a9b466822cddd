package service

import (
	"fmt"
	"os/exec"
	"syscall"

	"golang.org/x/sys/windows"

	"github.com/yuzugo/yuzu/agent/update"
)

// PrepareSelfUpdate sets what a Windows agent with the data dir dataDir needs to update
// itself: a service manager to start it again, and the watchdog (WatchTrial, through
// `update watch`) started after the switch.
func PrepareSelfUpdate(c *update.Config, dataDir string) {
	if !UnderSCM() {
		if c.Cannot == "" {
			c.Cannot = "not running as the Windows service: nothing would start the new version"
		}
		c.Tree = nil
		return
	}
	c.AfterSwitch = func(t update.Tree, from, to string) error {
		cmd := exec.Command(t.Binary(from), "--data-dir", dataDir, "update", "watch", t.Root)
		// Detached, in a group of its own and out of the agent's kill-on-close job
		// (proctree.TieToSelf): it outlives this process, which the service manager
		// is about to see exit.
		cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.DETACHED_PROCESS | windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_BREAKAWAY_FROM_JOB}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting the update watchdog %s: %w", t.Binary(from), err)
		}
		return cmd.Process.Release()
	}
}
