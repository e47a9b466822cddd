//go:build !linux && !darwin && !windows

package acl

import (
	"context"
	"errors"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
)

// Gather is not implemented on this system.
func Gather(context.Context, string, *pathcheck.Base) ([]Row, error) {
	return nil, errors.New("ACL reading is not supported on this platform")
}
