//go:build !unix && !windows

package subprocess

import (
	"errors"
	"os/exec"
)

const defaultPath = "/bin"

func rootDir() string { return "/" }

func prepare(*exec.Cmd) {}

type group struct{}

// newGroup refuses: without process groups the runner cannot keep its promise to kill
// everything the tool started, so it does not run tools at all here.
func newGroup(*exec.Cmd) (*group, error) {
	return nil, errors.New("process groups are not supported on this platform")
}

func (*group) kill() error { return nil }
func (*group) close()      {}
