package safefile

import (
	"fmt"

	"github.com/yuzugo/yuzu/sdk/rows"
)

// The Windows side of "owned by a trusted user and writable by nobody else". Windows
// has no mode bits, so TrustedFile there reads the file's owner and DACL from its open
// handle (safefile_windows.go) and judges them here. The judgement has no build tags,
// so that the rule is tested on every system, not only under Windows or Wine.

// ace is one access control entry of a DACL, as far as the check needs it.
type ace struct {
	Type  uint8 // ACCESS_ALLOWED_ACE_TYPE 0, ACCESS_DENIED_ACE_TYPE 1, ...
	Flags uint8 // INHERIT_ONLY_ACE 0x8 is the flag read
	Mask  uint32
	SID   string // S-1-...; read for the allowed and denied types only
}

// Access rights that let a holder change what a file says, or remove or replace it:
// write and append data, delete, change the DACL or the owner, and the generic rights
// that include writing. On a directory the first two are "add a file" and "add a
// subdirectory", and FILE_DELETE_CHILD lets the holder remove any entry in it.
const (
	fileWriteData   = 0x2
	fileAppendData  = 0x4
	fileDeleteChild = 0x40
	rightDelete     = 0x10000
	writeDAC        = 0x40000
	writeOwner      = 0x80000
	genericAll      = 0x10000000
	genericWrite    = 0x40000000
	fileWriteRights = fileWriteData | fileAppendData | rightDelete | writeDAC | writeOwner | genericAll | genericWrite
	dirWriteRights  = fileWriteRights | fileDeleteChild

	// Rights that let a holder read what a file says (Private): read data, and the
	// generic rights that include it.
	fileReadData = 0x1
	genericRead  = 0x80000000
	readRights   = fileReadData | genericRead | genericAll

	aceAllowed     = 0
	aceDenied      = 1
	aceInheritOnly = 0x8
)

// trustedSIDs may own and change a trusted file whoever the agent runs as: LocalSystem,
// the Administrators group (the owner of what an elevated administrator creates),
// TrustedInstaller, and CREATOR OWNER and OWNER RIGHTS, which stand for the owner
// (checked on its own).
var trustedSIDs = map[string]bool{
	"S-1-5-18":     true,
	"S-1-5-32-544": true,
	"S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464": true,
	"S-1-3-0": true,
	"S-1-3-4": true,
}

// checkDACL says why a file or directory with this owner and DACL is not trusted, or
// nil. It must be owned by a trusted SID or by self (the SID of the user this process
// runs as), have a DACL (a missing one lets everyone do everything), and its allow
// entries may give nobody else a right to change it (for a directory, also to remove
// its entries). Deny entries only take rights away and inherit-only entries are not
// this object's, so both are passed over; an entry of a type this check does not read
// (an object or callback entry) is refused rather than guessed at. name looks up an
// account name for the error message (nil, or "" when unknown, shows the SID alone); it
// is called only for the SID an error names, since a lookup can be slow.
func checkDACL(owner string, hasDACL bool, aces []ace, self string, dir bool, name func(sid string) string) error {
	who := func(sid string) string {
		if name != nil {
			if n := name(sid); n != "" {
				return rows.Printable(n) + " (" + sid + ")"
			}
		}
		return sid
	}
	trusted := func(sid string) bool { return trustedSIDs[sid] || (self != "" && sid == self) }
	if !trusted(owner) {
		return fmt.Errorf("owned by %s, not by SYSTEM, Administrators, TrustedInstaller or the agent's user", who(owner))
	}
	if !hasDACL {
		return fmt.Errorf("open to everyone: it has no DACL")
	}
	rights := uint32(fileWriteRights)
	if dir {
		rights = dirWriteRights
	}
	for _, a := range aces {
		if a.Flags&aceInheritOnly != 0 || a.Type == aceDenied {
			continue
		}
		if a.Type != aceAllowed {
			return fmt.Errorf("guarded by an access entry of type %d, which the agent does not read; give it a plain DACL", a.Type)
		}
		if a.Mask&rights != 0 && !trusted(a.SID) {
			return fmt.Errorf("writable by %s (access mask 0x%x): only SYSTEM, Administrators, TrustedInstaller and the agent's user may change it", who(a.SID), a.Mask)
		}
	}
	return nil
}

// checkPrivateDACL says who besides the trusted accounts may read a file with this DACL,
// or nil: the Windows side of Private. A missing DACL lets everyone read; an entry of a
// type this check does not read is named rather than guessed at, as in checkDACL.
func checkPrivateDACL(hasDACL bool, aces []ace, self string, name func(sid string) string) error {
	if !hasDACL {
		return fmt.Errorf("readable by everyone: it has no DACL")
	}
	for _, a := range aces {
		if a.Flags&aceInheritOnly != 0 || a.Type == aceDenied {
			continue
		}
		if a.Type != aceAllowed {
			return fmt.Errorf("guarded by an access entry of type %d, which the agent does not read", a.Type)
		}
		if a.Mask&readRights != 0 && !trustedSIDs[a.SID] && (self == "" || a.SID != self) {
			who := a.SID
			if name != nil {
				if n := name(a.SID); n != "" {
					who = rows.Printable(n) + " (" + a.SID + ")"
				}
			}
			return fmt.Errorf("readable by %s (access mask 0x%x)", who, a.Mask)
		}
	}
	return nil
}
