//go:build !darwin && !windows

package main

import (
	"context"

	"github.com/yuzugo/yuzu/sdk"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
)

// signature answers, for a path that has passed validation, that this system has no
// code signatures to verify.
func signature(_ context.Context, _ *sdk.Request, out *sdk.Output, _ string, _ *pathcheck.Base) sdk.Result {
	return out.Fail("code signature verification is not supported on this platform")
}

// versionInfo answers, for a path that has passed validation, that this system has
// no version resources to read.
func versionInfo(_ context.Context, _ *sdk.Request, out *sdk.Output, _ string, _ *pathcheck.Base) sdk.Result {
	return out.Fail("version info extraction is not supported on this platform")
}
