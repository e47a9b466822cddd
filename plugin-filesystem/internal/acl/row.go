// Package acl reads a file's owner, mode and access control list and turns them into
// the get_acl action's rows, the same row shapes on every system:
//
//	Linux, macOS: owner, group, permissions, mode, acl|<none|extended|unsupported>|<flags>,
//	              then ace|<type>|<principal>|<permissions>|<flags>
//	Windows:      sddl, control|<flags>, then ace|<type>|<principal>|0x<mask>|<flags>
//
// The parsers (POSIX ACL xattr blobs, macOS `ls -le` text, Windows ACE bytes) are pure
// functions that run and are tested on every system; Gather, the per-system reader, is
// thin. docs/filesystem.md describes the rows for users.
package acl

import (
	"fmt"

	"github.com/yuzugo/yuzu/sdk/rows"
)

// Row is one output row; the SDK escapes its fields when the action writes it.
type Row = rows.Row

// newRow is rows.New under a name that the functions here, whose row slices are
// called rows, do not shadow.
func newRow(kind string, fields ...string) Row { return rows.New(kind, fields...) }

// dash stands in for an empty field, as every get_acl row does.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// statRows returns the owner, group, permissions and mode rows shared by Linux and
// macOS. mode is st_mode; permissions shows its nine rwx bits, mode its 12
// permission bits in octal.
func statRows(owner, group string, mode uint32) []Row {
	const letters = "rwxrwxrwx"
	perm := []byte("---------")
	for i := range perm {
		if mode&(1<<(8-i)) != 0 {
			perm[i] = letters[i]
		}
	}
	return []Row{
		newRow("owner", owner),
		newRow("group", group),
		newRow("permissions", string(perm)),
		newRow("mode", fmt.Sprintf("%04o", mode&0o7777)),
	}
}
