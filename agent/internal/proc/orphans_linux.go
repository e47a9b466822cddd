package proc

import (
	"os"
	"sync"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/sdk/proctree"
)

// SweepOrphans kills and reaps every child of the agent that is not a live plugin or
// inside one: with the agent as child subreaper, that is exactly what dead plugins
// left behind. The caller holds the launcher's lock, so no plugin is half-started.
// reaping holds the orphans already killed and not yet reaped: they are not killed
// again (once reaped, their pid could belong to someone else).
func SweepOrphans(live, reaping map[int]bool, mu *sync.Mutex, log hclog.Logger) {
	if len(live)+len(reaping) == 0 && !proctree.HasChildren() {
		return // nothing of ours is left anywhere: no need to read the process table
	}
	t := proctree.Snapshot()
	for _, pid := range t.Children(os.Getpid()) {
		if live[pid] || reaping[pid] {
			continue
		}
		log.Warn("killing a process a plugin left behind", "pid", pid)
		for _, d := range t.Descendants(pid) {
			_ = syscall.Kill(d, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		reaping[pid] = true
		go func() {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
			mu.Lock()
			delete(reaping, pid)
			mu.Unlock()
		}()
	}
}
