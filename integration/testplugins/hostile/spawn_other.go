//go:build !linux && !windows

package main

import (
	"context"
	"errors"

	"github.com/yuzugo/yuzu/sdk"
)

// spawn reads /proc to find what it started; the integration tests that use it run on
// Linux only.
func spawn(context.Context, *sdk.Request, *sdk.Output) (sdk.Result, error) {
	return sdk.Result{}, errors.New("spawn is only implemented on Linux")
}

// serveChild is Windows-only (spawn_windows.go): here no copy of this binary is
// started as a descendant.
func serveChild() bool { return false }
