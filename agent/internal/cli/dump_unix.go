//go:build unix

package cli

import (
	"os"
	"syscall"
)

// dumpSignal asks a running agent for a goroutine dump (watchDumps).
var dumpSignal os.Signal = syscall.SIGUSR1
