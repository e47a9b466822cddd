package safefile

import (
	"strings"
	"testing"
)

// TestCheckDACL: the Windows rule, on DACLs as Windows and Wine hand them out. It runs
// on every system: the rule is plain data in, error out.
func TestCheckDACL(t *testing.T) {
	const (
		self   = "S-1-5-21-1-2-3-1001"
		other  = "S-1-5-21-1-2-3-1002"
		users  = "S-1-5-32-545"
		system = "S-1-5-18"
		admins = "S-1-5-32-544"
		world  = "S-1-1-0"
		ti     = "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464"
	)
	full, read := uint32(0x1f01ff), uint32(0x1200a9)
	base := []ace{{Mask: full, SID: system}, {Mask: full, SID: admins}}
	with := func(extra ...ace) []ace { return append(append([]ace(nil), base...), extra...) }
	names := map[string]string{world: "Everyone", users: `BUILTIN\Users`, other: "host\\bob\x1b[2J"}
	for _, c := range []struct {
		name    string
		owner   string
		hasDACL bool
		aces    []ace
		dir     bool
		want    string // "" for accepted, else part of the error
	}{
		{"system and admins only", admins, true, base, false, ""},
		{"owned by TrustedInstaller", ti, true, with(ace{Mask: full, SID: ti}), false, ""},
		{"users may read", system, true, with(ace{Mask: read, SID: users}), false, ""},
		{"the agent's user may write", self, true, with(ace{Mask: full, SID: self}), false, ""},
		{"Wine's 0644", self, true, []ace{{Mask: full, SID: system}, {Mask: full, SID: self}, {Mask: read, SID: world}}, false, ""},
		{"Wine's 0666", self, true, []ace{{Mask: full, SID: system}, {Mask: full, SID: self}, {Mask: 0x1301ff, SID: world}}, false,
			"writable by Everyone (S-1-1-0) (access mask 0x1301ff): only SYSTEM, Administrators, TrustedInstaller and the agent's user may change it"},
		{"users may append", system, true, with(ace{Mask: 0x4, SID: users}), false, `writable by BUILTIN\Users (S-1-5-32-545) (access mask 0x4)`},
		{"users may delete", system, true, with(ace{Mask: 0x10000, SID: users}), false, "writable by"},
		{"another user may change the DACL", system, true, with(ace{Mask: 0x40000, SID: other}), false, "writable by host\\bob\\x1b[2J (" + other + ")"},
		{"another user may take ownership", system, true, with(ace{Mask: 0x80000, SID: other}), false, "writable by"},
		{"generic write", system, true, with(ace{Mask: 0x40000000, SID: users}), false, "writable by"},
		{"generic all", system, true, with(ace{Mask: 0x10000000, SID: users}), false, "writable by"},
		{"a deny entry is no grant", system, true, with(ace{Type: 1, Mask: full, SID: world}), false, ""},
		{"inherit-only is not this file's", system, true, with(ace{Flags: 0x8 | 0x3, Mask: full, SID: users}), false, ""},
		{"an object entry is not guessed at", system, true, with(ace{Type: 5, Mask: full}), false, "access entry of type 5"},
		{"owned by another user", other, true, base, false, "owned by host\\bob\\x1b[2J (" + other + "), not by SYSTEM"},
		{"owned by Wine's other uid", "S-1-5-7", true, base, false, "owned by S-1-5-7,"},
		{"no DACL", system, false, nil, false, "open to everyone: it has no DACL"},
		// FILE_DELETE_CHILD means nothing on a file and everything on a directory:
		// whoever holds it may remove any entry and put another in its place.
		{"delete-child on a file", system, true, with(ace{Mask: read | 0x40, SID: users}), false, ""},
		{"delete-child on a directory", system, true, with(ace{Mask: read | 0x40, SID: users}), true, "writable by"},
		{"a directory users may add files to", system, true, with(ace{Mask: read | 0x2, SID: users}), true, "writable by"},
		{"a directory users may read", system, true, with(ace{Mask: read, SID: users}), true, ""},
	} {
		err := checkDACL(c.owner, c.hasDACL, c.aces, self, c.dir, func(sid string) string { return names[sid] })
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
		}
	}
	// Without a lookup (or one that knows nothing) the SID stands alone.
	if err := checkDACL(other, true, base, self, false, nil); err == nil || !strings.HasPrefix(err.Error(), "owned by "+other+", not by") {
		t.Errorf("no name lookup: %v", err)
	}
	// No self (its token could not be read) trusts only the fixed accounts.
	if err := checkDACL(self, true, base, "", false, nil); err == nil {
		t.Error("an owner was trusted as the agent's user when that user is unknown")
	}
}

// TestCheckPrivateDACL: who besides the trusted accounts may read a file, on DACLs as
// Windows and Wine hand them out.
func TestCheckPrivateDACL(t *testing.T) {
	const (
		self   = "S-1-5-21-1-2-3-1001"
		users  = "S-1-5-32-545"
		system = "S-1-5-18"
		admins = "S-1-5-32-544"
		world  = "S-1-1-0"
	)
	full, read := uint32(0x1f01ff), uint32(0x1200a9)
	base := []ace{{Mask: full, SID: system}, {Mask: full, SID: admins}}
	with := func(extra ...ace) []ace { return append(append([]ace(nil), base...), extra...) }
	names := map[string]string{users: `BUILTIN\Users`}
	for _, c := range []struct {
		name    string
		hasDACL bool
		aces    []ace
		want    string
	}{
		{"system and admins only", true, base, ""},
		{"the agent's user", true, with(ace{Mask: full, SID: self}), ""},
		{"users may read (an inherited ProgramData DACL)", true, with(ace{Mask: read, SID: users}), `readable by BUILTIN\Users (S-1-5-32-545) (access mask 0x1200a9)`},
		{"Wine's 0644", true, []ace{{Mask: full, SID: system}, {Mask: full, SID: self}, {Mask: read, SID: world}}, "readable by S-1-1-0"},
		{"generic read", true, with(ace{Mask: 0x80000000, SID: users}), "readable by"},
		{"attributes only", true, with(ace{Mask: 0x80 | 0x100000, SID: users}), ""},
		{"a deny entry is no grant", true, with(ace{Type: 1, Mask: full, SID: world}), ""},
		{"inherit-only is not this file's", true, with(ace{Flags: 0x8 | 0x3, Mask: full, SID: users}), ""},
		{"an object entry is not guessed at", true, with(ace{Type: 5, Mask: full}), "access entry of type 5"},
		{"no DACL", false, nil, "readable by everyone"},
	} {
		err := checkPrivateDACL(c.hasDACL, c.aces, self, func(sid string) string { return names[sid] })
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
		}
	}
}
