package agentconf

import (
	"fmt"

	"github.com/yuzugo/yuzu/sdk/rows"
)

// The Windows side of "writable by nobody else" (docs/operations.md, "Configuration
// file"): Windows has no mode bits, so the file's owner and DACL are read
// (acl_windows.go) and judged here, without build tags, so that the rule is tested
// on every system.

// ACE is one access control entry of a DACL, as far as the check needs it.
type ACE struct {
	Type  uint8 // ACCESS_ALLOWED_ACE_TYPE 0, ACCESS_DENIED_ACE_TYPE 1, ...
	Flags uint8 // INHERIT_ONLY_ACE 0x8 is the flag read
	Mask  uint32
	SID   string // S-1-...
	Name  string // DOMAIN\account when it could be looked up, else ""
}

// Access rights that let a holder change what the file says, or remove it: write and
// append data, delete, change the DACL or the owner, and the generic rights that
// include writing.
const (
	fileWriteData  = 0x2
	fileAppendData = 0x4
	rightDelete    = 0x10000
	writeDAC       = 0x40000
	writeOwner     = 0x80000
	genericAll     = 0x10000000
	genericWrite   = 0x40000000
	writeRights    = fileWriteData | fileAppendData | rightDelete | writeDAC | writeOwner | genericAll | genericWrite

	aceAllowed     = 0
	aceDenied      = 1
	aceInheritOnly = 0x8
)

// trustedSIDs may own and change the file whoever the agent runs as: LocalSystem,
// the Administrators group, TrustedInstaller, and CREATOR OWNER and OWNER RIGHTS,
// which stand for the owner (checked on its own).
var trustedSIDs = map[string]bool{
	"S-1-5-18":     true,
	"S-1-5-32-544": true,
	"S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464": true,
	"S-1-3-0": true,
	"S-1-3-4": true,
}

// CheckDACL says why a configuration file with this owner and DACL may not be used,
// or nil: it must be owned by a trusted SID or by self (the agent's own user), have a
// DACL (none lets everyone do everything), and grant no write right to anyone else.
// Deny entries only take rights away and are passed over; entries of a type this
// check does not read are refused rather than guessed at.
func CheckDACL(owner, ownerName string, hasDACL bool, aces []ACE, self string) error {
	who := func(sid, name string) string {
		if name != "" {
			return rows.Printable(name) + " (" + sid + ")"
		}
		return sid
	}
	trusted := func(sid string) bool { return trustedSIDs[sid] || (self != "" && sid == self) }
	if !trusted(owner) {
		return fmt.Errorf("owned by %s, not by SYSTEM, Administrators or the agent's user", who(owner, ownerName))
	}
	if !hasDACL {
		return fmt.Errorf("has no DACL, so everyone may change it")
	}
	for _, a := range aces {
		if a.Flags&aceInheritOnly != 0 || a.Type == aceDenied {
			continue
		}
		if a.Type != aceAllowed {
			return fmt.Errorf("has an access entry of type %d for %s that the agent does not read; give it a plain DACL", a.Type, who(a.SID, a.Name))
		}
		if a.Mask&writeRights != 0 && !trusted(a.SID) {
			return fmt.Errorf("is writable by %s (access mask 0x%x): only SYSTEM, Administrators and the agent's user may change it", who(a.SID, a.Name), a.Mask)
		}
	}
	return nil
}
