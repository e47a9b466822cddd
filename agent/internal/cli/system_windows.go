package cli

import (
	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
)

// runsAsSystem reports whether the agent is the machine's rather than a user's: the
// service control manager started it, or it runs elevated (an administrator's
// root).
func runsAsSystem() bool {
	if is, err := svc.IsWindowsService(); err == nil && is {
		return true
	}
	return windows.GetCurrentProcessToken().IsElevated()
}
