//go:build unix && !linux && !darwin

package proctree

import "os/exec"

func prepare(cmd *exec.Cmd, _ bool) { prepareUnix(cmd) }

// BecomeSubreaper is not available here.
func BecomeSubreaper() error { return ErrUnsupported }

// TieToSelf is a no-op here.
func TieToSelf() error { return nil }

// parentTable is not implemented here: Kill then reaches the process group only.
func parentTable() map[int]int { return nil }

// hasChildren errs towards true here.
func hasChildren() bool { return true }
