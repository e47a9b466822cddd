//go:build !linux && !windows

package limits

import "os/exec"

// Host makes no boxes here: this system has neither cgroups nor job objects.
type Host struct{}

// New returns a Host whose boxes are nil (no limits).
func New() *Host { return &Host{} }

// Unavailable says why there are no limits.
func (*Host) Unavailable() string { return "resource limits are not implemented on this system" }

// Where is empty: there are no boxes.
func (*Host) Where() string { return "" }

// Close does nothing.
func (*Host) Close() {}

// Box returns nil: no limits.
func (*Host) Box(string, Limits) (*Box, error) { return nil, nil }

// Box is never made here; its methods accept nil.
type Box struct{ limits Limits }

// Limits returns the box's limits.
func (b *Box) Limits() Limits { return b.limits }

// Prepare does nothing.
func (*Box) Prepare(*exec.Cmd) {}

// Started does nothing.
func (*Box) Started(int) error { return nil }

// StartFailed does nothing.
func (*Box) StartFailed() {}

// Kill does nothing.
func (*Box) Kill() {}

// Close does nothing.
func (*Box) Close() {}

// Usage is unknown.
func (*Box) Usage() Usage { return Usage{} }

// OOMKilled is never known here.
func (*Box) OOMKilled() bool { return false }
