package agentconf

import (
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// checkFileACL reads the open file's owner and DACL and judges them (CheckDACL).
func checkFileACL(f *os.File) error {
	sd, err := windows.GetSecurityInfo(windows.Handle(f.Fd()), windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return err
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return err
	}
	self := ""
	if u, err := windows.GetCurrentProcessToken().GetTokenUser(); err == nil {
		self = u.User.Sid.String()
	}
	dacl, _, err := sd.DACL()
	if err == windows.ERROR_OBJECT_NOT_FOUND || (err == nil && dacl == nil) {
		return CheckDACL(owner.String(), accountName(owner), false, nil, self)
	}
	if err != nil {
		return err
	}
	aces := make([]ACE, 0, dacl.AceCount)
	for i := uint32(0); i < uint32(dacl.AceCount); i++ {
		var a *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &a); err != nil {
			return err
		}
		e := ACE{Type: a.Header.AceType, Flags: a.Header.AceFlags, Mask: uint32(a.Mask)}
		// The SID of the allowed and denied types starts at SidStart; for other types
		// it is elsewhere, and CheckDACL refuses them by type before using it.
		if e.Type == aceAllowed || e.Type == aceDenied {
			sid := (*windows.SID)(unsafe.Pointer(&a.SidStart))
			e.SID, e.Name = sid.String(), accountName(sid)
		}
		aces = append(aces, e)
	}
	return CheckDACL(owner.String(), accountName(owner), true, aces, self)
}

// accountName is DOMAIN\account for sid, or "" when it cannot be looked up.
func accountName(sid *windows.SID) string {
	account, domain, _, err := sid.LookupAccount("")
	if err != nil {
		return ""
	}
	if domain == "" {
		return account
	}
	return domain + `\` + account
}
