//go:build !unix

package cli

import "os"

// dumpSignal is nil: Windows has no signal an operator can send for a dump.
var dumpSignal os.Signal
