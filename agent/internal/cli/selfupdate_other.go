//go:build !windows

package cli

import (
	"io"

	"github.com/yuzugo/yuzu/agent/update"
)

// windowsUpdate has nothing to do where the service manager runs the guard itself
// (systemd's ExecStartPre).
func windowsUpdate(config, *update.Config) {}

// runWatch is Windows': elsewhere the guard runs before each start.
func runWatch(config, string, io.Writer) (int, error) {
	return 0, usagef("update watch is the Windows service's watchdog; elsewhere the service manager runs update guard")
}
