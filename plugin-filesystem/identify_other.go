//go:build !darwin && !windows

package main

import (
	"context"

	"github.com/yuzugo/yuzu/sdk"
)

// signature answers, for a path that has passed validation, that this system has no
// code signatures to verify.
func signature(_ context.Context, _ *sdk.Request, out *sdk.Output, _, _ string) sdk.Result {
	return out.Fail("code signature verification is not supported on this platform")
}

// versionInfo answers, for a path that has passed validation, that this system has
// no version resources to read.
func versionInfo(_ context.Context, _ *sdk.Request, out *sdk.Output, _, _ string) sdk.Result {
	return out.Fail("version info extraction is not supported on this platform")
}
