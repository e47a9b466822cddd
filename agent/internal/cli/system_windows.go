package cli

import (
	"golang.org/x/sys/windows"

	"github.com/yuzugo/yuzu/agent/internal/service"
)

// runsAsSystem reports whether the agent is the machine's rather than a user's: the
// service control manager started it, or it runs elevated (an administrator's
// root).
func runsAsSystem() bool {
	if service.UnderSCM() {
		return true
	}
	return windows.GetCurrentProcessToken().IsElevated()
}
