package sdk_test

import "os/exec"

// hasPdeathsig reports whether cmd's child gets a signal when its parent dies.
func hasPdeathsig(cmd *exec.Cmd) bool {
	return cmd.SysProcAttr != nil && cmd.SysProcAttr.Pdeathsig != 0
}
