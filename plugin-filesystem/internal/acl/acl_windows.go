package acl

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
	"golang.org/x/sys/windows"
)

// Gather reads the owner and DACL of path, a canonical path from pathcheck.Validate,
// and returns the get_acl rows: the SDDL of owner and DACL, the DACL control flags,
// then one row per entry. The DACL is copied out and decoded in full before any row
// is built, so a defect is one error rather than rows followed by an error. A file
// with no DACL (everyone has full access) has no ace rows. The path is validated
// again (base directory included) right before it is read.
func Gather(ctx context.Context, path string, base *pathcheck.Base) ([]Row, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if again, err := pathcheck.Validate(path, base); err != nil {
		return nil, err
	} else if again != path {
		return nil, fmt.Errorf("%s: %w", path, pathcheck.ErrChanged)
	}
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		var errno windows.Errno
		if errors.As(err, &errno) {
			return nil, fmt.Errorf("GetNamedSecurityInfo failed (error %d)", uint32(errno))
		}
		return nil, fmt.Errorf("GetNamedSecurityInfo failed (%w)", err)
	}
	control, _, err := sd.Control()
	if err != nil {
		return nil, fmt.Errorf("reading the security descriptor control: %w", err)
	}
	var aces []WinACE
	dacl, _, err := sd.DACL()
	switch {
	case errors.Is(err, windows.ERROR_OBJECT_NOT_FOUND):
		// No DACL present.
	case err != nil:
		return nil, fmt.Errorf("reading the DACL: %w", err)
	case dacl != nil:
		if aces, err = ParseWinACL(aclBytes(dacl)); err != nil {
			return nil, err
		}
	}
	return WindowsRows(sd.String(), uint16(control), aces, accountName), nil
}

// aclBytes copies the ACL out of the security descriptor, using the size its header
// declares.
func aclBytes(acl *windows.ACL) []byte {
	size := *(*uint16)(unsafe.Add(unsafe.Pointer(acl), 2))
	return append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(acl)), size)...)
}

// accountName returns DOMAIN\name for a SID, or "" when the account does not resolve.
// An account without a domain (Everyone) reads "\Everyone", as upstream prints it.
func accountName(sid []byte) string {
	s := (*windows.SID)(unsafe.Pointer(&sid[0]))
	account, domain, _, err := s.LookupAccount("")
	if err != nil || account == "" {
		return ""
	}
	return domain + `\` + account
}
