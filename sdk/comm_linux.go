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
func init() {
	if !startedByAgent {
		return
	}
	if name := processName(os.Args); name != "" {
		_ = os.WriteFile("/proc/self/comm", []byte(name), 0)
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
