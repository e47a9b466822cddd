//go:build !linux

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
