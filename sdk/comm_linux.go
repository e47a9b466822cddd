package sdk

import (
	"os"
	"path/filepath"
)

// The agent runs a plugin from a sealed memory copy of its verified binary, executed
// as /proc/self/fd/N, so the kernel names the process after that path: "9", or
// whatever the descriptor's number was. top, ps -o comm, pgrep and the kernel's own
// messages (an OOM kill, a hung task) would all show that number. The SDK gives the
// process the name of its binary instead, taken from the argv[0] the agent passes
// (the path in the plugin directory). The kernel keeps 15 bytes of it.
//
// The name is a thread's, not the process's: every thread the Go runtime started
// before this init (sysmon, the first Ms) keeps the number, and ps -L, top -H and perf
// show them so. So every thread there is gets the name, twice over (a thread started
// while the first pass ran was cloned from a thread with the old name or the new);
// a thread started later is cloned from a named one and inherits it.
func init() {
	if !startedByAgent {
		return
	}
	if name := processName(os.Args); name != "" {
		nameThreads(name)
	}
}

// nameThreads gives every thread of the process the name.
func nameThreads(name string) {
	for range 2 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			_ = os.WriteFile("/proc/self/comm", []byte(name), 0)
			return
		}
		for _, t := range tasks {
			_ = os.WriteFile(filepath.Join("/proc/self/task", t.Name(), "comm"), []byte(name), 0)
		}
	}
}

// processName is the base name of argv[0], cut to the kernel's 15 bytes, or "" when
// there is none or it holds anything but printable ASCII.
func processName(args []string) string {
	if len(args) == 0 {
		return ""
	}
	name := filepath.Base(args[0])
	if name == "." || name == "/" {
		return ""
	}
	for i := 0; i < len(name); i++ {
		if name[i] < 0x21 || name[i] > 0x7e {
			return ""
		}
	}
	if len(name) > 15 {
		name = name[:15]
	}
	return name
}
