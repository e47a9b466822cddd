package supervisor

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/yuzugo/yuzu/agent/internal/limits"
	"github.com/yuzugo/yuzu/agent/internal/proc"
)

// ErrUnknownPlugin is wrapped when no plugin binary of that name is in the plugin dir.
var ErrUnknownPlugin = errors.New("plugin not found")

// RefusedError says a plugin binary was refused before it ever ran. The image check
// (agent/internal/proc) makes them as well as the supervisor.
type RefusedError = proc.RefusedError

// CrashedError says the plugin child died (or was killed) while the command ran.
type CrashedError struct {
	Plugin string
	Detail string
	// MemoryLimit, when set, says the kernel killed the child at this memory limit
	// (its box's; docs/agent.md "Resource limits").
	MemoryLimit int64
}

// Error says what happened.
func (e *CrashedError) Error() string {
	if e.MemoryLimit > 0 {
		return memoryLimitReason(e.MemoryLimit)
	}
	return "plugin crashed: " + e.Detail
}

// memoryLimitReason is the error of a child killed at its memory limit.
func memoryLimitReason(limit int64) string {
	return "plugin exceeded its memory limit (" + limits.MiB(limit) + ")"
}

// TimeoutError says the command outlived its deadline plus the grace period and the
// child was killed.
type TimeoutError struct {
	Plugin   string
	Deadline time.Duration
}

// Error says what happened.
func (e *TimeoutError) Error() string {
	return "plugin timed out after " + Seconds(e.Deadline)
}

// Seconds writes d as a number of seconds, "600s" or "1.5s", the way timeouts are
// configured (Go's "10m0s" reads badly in an error row).
func Seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

// WaitTimeoutError says a command's deadline passed before it reached its plugin:
// while it queued for a free slot, or while the plugin was starting or waiting out a
// restart. The plugin never ran it.
type WaitTimeoutError struct {
	Plugin   string
	Deadline time.Duration
	// For is what the command waited for: "a free slot on plugin NAME" or "plugin
	// NAME to start (STATE: LAST ERROR)".
	For string
}

// Error says what happened.
func (e *WaitTimeoutError) Error() string {
	return "command timed out after " + Seconds(e.Deadline) + " waiting for " + e.For + "; it did not run"
}

// FailedError says the plugin is in the failed state: it exhausted its restart budget
// and commands are refused until Until.
type FailedError struct {
	Plugin string
	Reason string
	Until  time.Time
}

// Error says what happened.
func (e *FailedError) Error() string {
	return fmt.Sprintf("plugin %s failed: %s; next start attempt after %s", e.Plugin, e.Reason, e.Until.UTC().Format(time.RFC3339))
}

// StartError says the child could not be started or did not answer its handshake.
type StartError struct {
	Plugin string
	Err    error
}

// Error says what happened.
func (e *StartError) Error() string {
	return fmt.Sprintf("plugin %s did not start: %v", e.Plugin, e.Err)
}

// Unwrap returns the underlying error.
func (e *StartError) Unwrap() error { return e.Err }
