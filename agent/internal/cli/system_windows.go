package cli

import (
	"golang.org/x/sys/windows"
)

// runsAsSystem reports whether the agent is the machine's rather than a user's: the
// service control manager started it, or it runs elevated (an administrator's
// root).
func runsAsSystem() bool {
	if underSCM() {
		return true
	}
	return windows.GetCurrentProcessToken().IsElevated()
}
