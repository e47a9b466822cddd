package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/windows"

	"github.com/yuzugo/yuzu/agent/internal/service"
	"github.com/yuzugo/yuzu/agent/update"
)

// windowsUpdate sets what a Windows agent needs to update itself: a service manager
// to start it again, and the watchdog (service.WatchTrial) started after the switch.
func windowsUpdate(cfg config, c *update.Config) {
	if !service.UnderSCM() {
		if c.Cannot == "" {
			c.Cannot = "not running as the Windows service: nothing would start the new version"
		}
		c.Tree = nil
		return
	}
	c.AfterSwitch = func(t update.Tree, from, to string) error {
		cmd := exec.Command(t.Binary(from), "--data-dir", cfg.dataDir, "update", "watch", t.Root)
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

// runWatch is `update watch TREE` on Windows: the watchdog, logging to
// <data-dir>/update/watch.log.
func runWatch(cfg config, root string, _ io.Writer) (int, error) {
	path := filepath.Join(cfg.dataDir, updateDir, "watch.log")
	// A detached process has no console: its log is the file.
	out := io.Writer(io.Discard)
	if f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
		defer f.Close()
		out = f
	}
	fmt.Fprintf(out, "update watch: started %s\n", time.Now().UTC().Format(time.RFC3339))
	m, err := service.ConnectSCM()
	if err != nil {
		fmt.Fprintln(out, "update watch: the service control manager:", err)
		return exitFail, nil
	}
	t := update.Tree{Root: root, GOOS: "windows"}
	err = service.WatchTrial(context.Background(), m, t, statePath(cfg), time.Second, out)
	_ = m.Close() // before the last line: whoever waits for it may delete the service
	if err != nil {
		fmt.Fprintln(out, "update watch:", err)
		fmt.Fprintln(out, "update watch: done")
		return exitFail, nil
	}
	fmt.Fprintln(out, "update watch: done")
	return exitOK, nil
}
