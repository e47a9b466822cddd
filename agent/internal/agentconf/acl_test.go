package agentconf

import (
	"strings"
	"testing"
)

// TestCheckDACL: the Windows rule for the configuration file, on DACLs as Windows
// and Wine hand them out.
func TestCheckDACL(t *testing.T) {
	const (
		self   = "S-1-5-21-1-2-3-1001"
		other  = "S-1-5-21-1-2-3-1002"
		users  = "S-1-5-32-545"
		system = "S-1-5-18"
		admins = "S-1-5-32-544"
		world  = "S-1-1-0"
	)
	full, read := uint32(0x1f01ff), uint32(0x1200a9)
	base := []ACE{{Mask: full, SID: system}, {Mask: full, SID: admins}}
	with := func(extra ...ACE) []ACE { return append(append([]ACE(nil), base...), extra...) }
	for _, c := range []struct {
		name    string
		owner   string
		hasDACL bool
		aces    []ACE
		want    string // "" for accepted, else part of the error
	}{
		{"system and admins only", admins, true, base, ""},
		{"users may read", system, true, with(ACE{Mask: read, SID: users, Name: `BUILTIN\Users`}), ""},
		{"the agent's user may write", self, true, with(ACE{Mask: full, SID: self}), ""},
		{"Wine's 0644", self, true, []ACE{{Mask: full, SID: system}, {Mask: full, SID: self}, {Mask: read, SID: world}}, ""},
		{"Wine's 0666", self, true, []ACE{{Mask: full, SID: system}, {Mask: full, SID: self}, {Mask: 0x1301ff, SID: world, Name: "Everyone"}}, "writable by Everyone (S-1-1-0)"},
		{"users may append", system, true, with(ACE{Mask: 0x4, SID: users}), "writable by S-1-5-32-545 (access mask 0x4)"},
		{"another user may change the DACL", system, true, with(ACE{Mask: 0x40000, SID: other}), "writable by " + other},
		{"generic write", system, true, with(ACE{Mask: 0x40000000, SID: users}), "writable by"},
		{"a deny entry is no grant", system, true, with(ACE{Type: 1, Mask: full, SID: world}), ""},
		{"inherit-only is not this file's", system, true, with(ACE{Flags: 0x8 | 0x3, Mask: full, SID: users}), ""},
		{"an object entry is not guessed at", system, true, with(ACE{Type: 5, Mask: full}), "type 5"},
		{"owned by another user", other, true, base, "owned by " + other},
		{"no DACL", system, false, nil, "no DACL"},
	} {
		err := CheckDACL(c.owner, "", c.hasDACL, c.aces, self)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
		}
	}
}
