//go:build !unix

package stacks

import "os"

// dumpSignal is nil: Windows has no signal an operator can send for a dump.
var dumpSignal os.Signal
