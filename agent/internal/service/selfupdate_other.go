//go:build !windows

package service

import "github.com/yuzugo/yuzu/agent/update"

// PrepareSelfUpdate has nothing to do where the service manager runs the guard itself
// (systemd's ExecStartPre).
func PrepareSelfUpdate(*update.Config, string) {}
