//go:build unix

package stacks

import (
	"os"
	"syscall"
)

// dumpSignal asks a running agent for a goroutine dump (Watch).
var dumpSignal os.Signal = syscall.SIGUSR1
