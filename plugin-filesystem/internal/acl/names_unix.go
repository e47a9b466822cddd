//go:build linux || darwin

package acl

import (
	"os/user"
	"strconv"
)

// idNames resolves uids and gids once each per call. Without cgo, Linux reads
// /etc/passwd and /etc/group only, so accounts from LDAP or SSSD show as numbers;
// macOS asks the system's directory services in any build.
type idNames struct {
	users, groups map[uint32]string
}

func newIDNames() *idNames {
	return &idNames{users: map[uint32]string{}, groups: map[uint32]string{}}
}

func (n *idNames) user(uid uint32) string {
	if s, ok := n.users[uid]; ok {
		return s
	}
	s := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(s); err == nil && u.Username != "" {
		s = u.Username
	}
	n.users[uid] = s
	return s
}

func (n *idNames) group(gid uint32) string {
	if s, ok := n.groups[gid]; ok {
		return s
	}
	s := strconv.FormatUint(uint64(gid), 10)
	if g, err := user.LookupGroupId(s); err == nil && g.Name != "" {
		s = g.Name
	}
	n.groups[gid] = s
	return s
}
