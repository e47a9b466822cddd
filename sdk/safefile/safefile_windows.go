package safefile

import (
	"fmt"
	"io/fs"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

func openNoFollow(path string) (*os.File, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	// FILE_FLAG_OPEN_REPARSE_POINT opens a symbolic link or junction itself rather
	// than its target; Open then refuses it because it is not a regular file.
	h, err := windows.CreateFile(p, windows.GENERIC_READ,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil,
		windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OPEN_REPARSE_POINT|windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(h), path), nil
}

func isSymlinkErr(error) bool { return false }

// Owned is not checked on Windows: a stat there carries no owner. TrustedFile and
// TrustedPath read the owner and DACL of the file itself.
func Owned(fs.FileInfo) error { return nil }

// Trusted is not checked on Windows, for the same reason as Owned: a stat has no mode
// bits and no owner there. Use TrustedFile (an open file) or TrustedPath.
func Trusted(fs.FileInfo, bool) error { return nil }

// TrustedFile reports whether only trusted users can change the open file f (fi is its
// stat): its owner must be SYSTEM, Administrators, TrustedInstaller or this process's
// user, it must have a DACL, and no allow entry may give anyone else a right to write,
// append, delete, or change its DACL or owner (on a directory also to remove its
// entries); checkDACL has the rule. The owner and DACL are read from the handle, so
// what is judged is the file that was opened, whatever the path names by now. Windows
// has no sticky bit; sticky is ignored.
func TrustedFile(f *os.File, fi fs.FileInfo, _ bool) error {
	return trustedHandle(windows.Handle(f.Fd()), fi.IsDir())
}

// TrustedPath is TrustedFile for a path that is not open: it opens path itself (a
// symbolic link or junction, never its target) for reading its security descriptor
// only, and judges that handle. fi is path's Lstat. A caller that goes on to read the
// file must check the handle it reads (TrustedFile): the path can change after this.
func TrustedPath(path string, fi fs.FileInfo, _ bool) error {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	h, err := windows.CreateFile(p, windows.READ_CONTROL,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil,
		windows.OPEN_EXISTING, windows.FILE_FLAG_OPEN_REPARSE_POINT|windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer windows.CloseHandle(h)
	return trustedHandle(h, fi.IsDir())
}

// trustedHandle reads the owner and DACL of h and judges them (checkDACL).
func trustedHandle(h windows.Handle, dir bool) error {
	sec, err := readSecurity(h)
	if err != nil {
		return err
	}
	return checkDACL(sec.owner, sec.hasDACL, sec.aces, sec.self, dir, accountName)
}

// Private reports whether only trusted accounts (SYSTEM, Administrators,
// TrustedInstaller, the agent's user) can read the open file f: a file that holds a
// secret (a key, a token) should give no one else read access. The error says who
// else can read it. fi is not needed on Windows.
func Private(f *os.File, _ fs.FileInfo) error {
	sec, err := readSecurity(windows.Handle(f.Fd()))
	if err != nil {
		return err
	}
	return checkPrivateDACL(sec.hasDACL, sec.aces, sec.self, accountName)
}

// security is a file's owner and DACL as the checks read them, with the SID of the
// user this process runs as.
type security struct {
	owner, self string
	hasDACL     bool
	aces        []ace
}

// readSecurity reads the owner and DACL of h.
func readSecurity(h windows.Handle) (security, error) {
	var sec security
	sd, err := windows.GetSecurityInfo(h, windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return sec, fmt.Errorf("cannot read its owner and DACL: %w", err)
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return sec, fmt.Errorf("cannot read its owner: %w", err)
	}
	if owner == nil {
		return sec, fmt.Errorf("it has no owner")
	}
	sec.owner = owner.String()
	// The agent's own user is trusted like SYSTEM: it could change the file anyway.
	// Without it (a token that cannot be read) only the fixed accounts are.
	if u, err := windows.GetCurrentProcessToken().GetTokenUser(); err == nil {
		sec.self = u.User.Sid.String()
	}
	dacl, _, err := sd.DACL()
	if err == windows.ERROR_OBJECT_NOT_FOUND || (err == nil && dacl == nil) {
		return sec, nil
	}
	if err != nil {
		return sec, fmt.Errorf("cannot read its DACL: %w", err)
	}
	sec.hasDACL = true
	sec.aces = make([]ace, 0, dacl.AceCount)
	for i := uint32(0); i < uint32(dacl.AceCount); i++ {
		var a *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &a); err != nil {
			return sec, fmt.Errorf("cannot read entry %d of its DACL: %w", i, err)
		}
		e := ace{Type: a.Header.AceType, Flags: a.Header.AceFlags, Mask: uint32(a.Mask)}
		// The allowed and denied types keep their SID at SidStart; the other types
		// keep it elsewhere, and the checks refuse them by type without a SID.
		if e.Type == aceAllowed || e.Type == aceDenied {
			e.SID = (*windows.SID)(unsafe.Pointer(&a.SidStart)).String()
		}
		sec.aces = append(sec.aces, e)
	}
	return sec, nil
}

// accountName is DOMAIN\account for a SID string, or "" when it cannot be looked up.
func accountName(s string) string {
	sid, err := windows.StringToSid(s)
	if err != nil {
		return ""
	}
	account, domain, _, err := sid.LookupAccount("")
	if err != nil {
		return ""
	}
	if domain == "" {
		return account
	}
	return domain + `\` + account
}
