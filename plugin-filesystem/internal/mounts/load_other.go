//go:build !linux && !darwin && !windows

package mounts

import "fmt"

// Load has no mount source on this OS and always reports the guard as
// unavailable, so the walk says it ran unguarded.
func Load() (*Table, error) {
	return nil, fmt.Errorf("%w: no mount list on this operating system", ErrUnavailable)
}
