package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/yuzugo/yuzu/sdk"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
)

// maxVersionResource bounds the buffer handed to GetFileVersionInfoW. A version
// resource is at most 64 KiB (its length is a 16-bit count); the system asks for
// about twice that to hold converted strings.
const maxVersionResource = 1 << 20

// signature verifies the embedded Authenticode signature with WinVerifyTrust
// (generic verify v2, no UI, no revocation check) on a handle opened without
// following a link, and reports the verdict with rc 0.
func signature(ctx context.Context, req *sdk.Request, out *sdk.Output, canon string, base *pathcheck.Base) sdk.Result {
	if err := ctx.Err(); err != nil {
		return out.Fail("get_signature stopped: " + err.Error())
	}
	f, err := pathcheck.OpenIn(base, canon, os.O_RDONLY, 0)
	if err != nil {
		return out.Fail(msgNotAccessible)
	}
	defer f.Close()
	path, err := windows.UTF16PtrFromString(canon)
	if err != nil {
		return out.Fail(msgNotAccessible)
	}
	file := windows.WinTrustFileInfo{FilePath: path, File: windows.Handle(f.Fd())}
	file.Size = uint32(unsafe.Sizeof(file))
	data := windows.WinTrustData{
		UIChoice:                        windows.WTD_UI_NONE,
		RevocationChecks:                windows.WTD_REVOKE_NONE,
		UnionChoice:                     windows.WTD_CHOICE_FILE,
		FileOrCatalogOrBlobOrSgnrOrCert: unsafe.Pointer(&file),
		StateAction:                     windows.WTD_STATEACTION_VERIFY,
		ProvFlags:                       windows.WTD_SAFER_FLAG | windows.WTD_REVOCATION_CHECK_NONE,
	}
	data.Size = uint32(unsafe.Sizeof(data))
	verr := windows.WinVerifyTrustEx(windows.InvalidHWND, &windows.WINTRUST_ACTION_GENERIC_VERIFY_V2, &data)
	data.StateAction = windows.WTD_STATEACTION_CLOSE
	if cerr := windows.WinVerifyTrustEx(windows.InvalidHWND, &windows.WINTRUST_ACTION_GENERIC_VERIFY_V2, &data); cerr != nil {
		req.Log.Debug("closing the WinVerifyTrust state failed", "err", cerr)
	}
	var code uint32
	if verr != nil {
		var errno syscall.Errno
		if !errors.As(verr, &errno) {
			return out.Fail("signature verification failed: " + verr.Error())
		}
		code = uint32(errno)
	}
	out.Row("signature_status", winTrustStatus(code))
	return sdk.Done()
}

// versionInfo reads the file's version resource with GetFileVersionInfoW and
// decodes it itself. The file is held open (opened without following a link) while
// the system reads it by name, and must still be at the validated path afterwards.
func versionInfo(ctx context.Context, req *sdk.Request, out *sdk.Output, canon string, base *pathcheck.Base) sdk.Result {
	if err := ctx.Err(); err != nil {
		return out.Fail("get_version_info stopped: " + err.Error())
	}
	f, err := pathcheck.OpenIn(base, canon, os.O_RDONLY, 0)
	if err != nil {
		return out.Fail(msgNotAccessible)
	}
	defer f.Close()
	size, err := windows.GetFileVersionInfoSize(canon, nil)
	if size == 0 {
		req.Log.Debug("no version resource", "path", canon, "err", err)
		return out.Fail("no version info found in file")
	}
	if size > maxVersionResource {
		return out.Fail("failed to read version info")
	}
	buf := make([]byte, size)
	if err := windows.GetFileVersionInfo(canon, 0, size, unsafe.Pointer(&buf[0])); err != nil {
		req.Log.Debug("GetFileVersionInfoW failed", "path", canon, "err", err)
		return out.Fail("failed to read version info")
	}
	if real, err := pathcheck.RealPath(f); err != nil || !strings.EqualFold(real, canon) {
		return out.Fail(msgNotAccessible)
	}
	res, err := parseVersionInfo(buf)
	if err != nil {
		req.Log.Debug("version resource refused", "path", canon, "err", err)
		return out.Fail("failed to read version info")
	}
	for _, r := range versionRows(res) {
		out.Row(r[0], r[1])
	}
	return sdk.Done()
}
