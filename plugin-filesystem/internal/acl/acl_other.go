//go:build !linux && !darwin && !windows

package acl

import (
	"context"
	"errors"
)

// Gather is not implemented on this system.
func Gather(context.Context, string, string) ([]Row, error) {
	return nil, errors.New("ACL reading is not supported on this platform")
}
