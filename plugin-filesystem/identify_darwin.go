package main

import (
	"context"
	"os"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/subprocess"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
)

// The system tools, named absolutely: the runner never searches PATH and never uses
// a shell.
const (
	codesignPath = "/usr/bin/codesign"
	plutilPath   = "/usr/bin/plutil"
)

// stillValid validates p again just before a tool is started on it: a path swapped
// for a link since the first validation no longer resolves to itself. This narrows
// the window in which a writer inside base_dir can redirect the tool; it cannot
// close it, because the tool opens the path by name (docs/filesystem.md).
func stillValid(p string, base *pathcheck.Base) bool {
	again, err := pathcheck.Validate(p, base)
	return err == nil && again == p
}

// signature runs codesign on the canonical path and reports its verdict with rc 0,
// whatever it is.
func signature(ctx context.Context, req *sdk.Request, out *sdk.Output, canon string, base *pathcheck.Base) sdk.Result {
	status := "unknown"
	if stillValid(canon, base) {
		res, err := subprocess.Run(ctx, subprocess.Spec{
			Argv:        []string{codesignPath, "--verify", "--deep", "--strict", canon},
			MergeStderr: true,
		})
		if err != nil {
			req.Log.Warn("codesign did not run", "err", err)
		}
		status = codesignStatus(res, err)
	}
	out.Row("signature_status", status)
	return sdk.Done()
}

// versionInfo reads CFBundleShortVersionString and CFBundleVersion of an .app
// bundle or an Info.plist with plutil. Whatever is missing is reported as
// version_status|not_available with rc 0.
func versionInfo(ctx context.Context, req *sdk.Request, out *sdk.Output, canon string, base *pathcheck.Base) sdk.Result {
	notAvailable := func() sdk.Result {
		out.Row("version_status", "not_available")
		return sdk.Done()
	}
	fi, err := os.Stat(canon)
	if err != nil {
		return notAvailable()
	}
	plist, ok := plistFor(canon, fi.IsDir())
	if !ok {
		return notAvailable()
	}
	// The derived name must validate as well: Contents or Info.plist may be a link
	// that leads out of base_dir.
	plist, err = pathcheck.Validate(plist, base)
	if err != nil {
		return notAvailable()
	}
	// plutil is only ever shown a regular file: a FIFO would hold it until its
	// deadline.
	if pfi, err := os.Stat(plist); err != nil || !pfi.Mode().IsRegular() {
		return notAvailable()
	}
	extract := func(key string) (string, bool) {
		if !stillValid(plist, base) {
			return "", false
		}
		res, err := subprocess.Run(ctx, subprocess.Spec{
			Argv: []string{plutilPath, "-extract", key, "raw", "-o", "-", plist},
		})
		if err != nil {
			req.Log.Warn("plutil did not run", "err", err)
		}
		return plutilValue(res, err)
	}
	short, okShort := extract("CFBundleShortVersionString")
	build, okBuild := extract("CFBundleVersion")
	if !okShort && !okBuild {
		return notAvailable()
	}
	if okShort {
		out.Row("product_version", short)
	}
	if okBuild {
		out.Row("file_version", build)
	}
	return sdk.Done()
}
