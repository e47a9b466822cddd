//go:build !linux

package sdk

import (
	"os"
	"time"
)

// watchParent makes the plugin exit when the agent that started it dies: the parent
// pid changes when the process is re-parented.
func watchParent(every time.Duration, gone func()) {
	pollParent(os.Getppid(), every, gone)
}
