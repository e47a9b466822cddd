//go:build unix && !linux

package sdk_test

import "os/exec"

// hasPdeathsig is false where the kernel has no parent-death signal.
func hasPdeathsig(*exec.Cmd) bool { return false }
