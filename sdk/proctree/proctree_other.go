//go:build !unix && !windows

package proctree

import (
	"os"
	"os/exec"
)

type sysGroup struct{}

func prepare(*exec.Cmd, bool) {}

// attach refuses: without process groups nothing here can keep the promise to end what
// a process started.
func attach(*os.Process) (*sysGroup, error) { return nil, ErrUnsupported }

func (*sysGroup) kill(p *os.Process) error          { return p.Kill() }
func (*sysGroup) killLeftovers(p *os.Process) error { return p.Kill() }
func (*sysGroup) close()                            {}

// BecomeSubreaper is not available here.
func BecomeSubreaper() error { return ErrUnsupported }

// TieToSelf is not available here.
func TieToSelf() error { return ErrUnsupported }

// KillDescendants is not available here.
func KillDescendants(int) {}

// Descendants is not available here.
func Descendants(int) []int { return nil }
