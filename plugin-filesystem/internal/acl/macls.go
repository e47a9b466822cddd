package acl

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBadListing is wrapped by ParseLsACL's errors.
var ErrBadListing = errors.New("unexpected ls -le output")

// MacACE is one entry of a macOS extended ACL as ls prints it.
type MacACE struct {
	Principal string   // "user:<name>", "group:<name>", "user:#<uid>", "group:#<gid>" or a UUID
	Type      string   // "allow" or "deny"
	Perms     []string // ls's permission names in its order
	Flags     []string // inherited, file_inherit, directory_inherit, limit_inherit, only_inherit
}

// LsListing is what ParseLsACL reads from the output of `ls -l -e -d -i -q -- <path>`.
type LsListing struct {
	Inode    uint64 // the listed file's inode, to tie the answer to the file examined
	FileType byte   // first character of the mode string: '-', 'd', 'l', 'p', 'c', 'b', 's'
	Entries  []MacACE
}

// inheritance flags ls prints after the permissions, in its order.
var macEntryFlags = map[string]bool{
	"file_inherit": true, "directory_inherit": true, "limit_inherit": true, "only_inherit": true,
}

// ParseLsACL parses the output of macOS `ls -l -e -d -i -q -- <path>` for one path: a
// long-listing line starting with the inode number and the mode string, then one line
// per ACL entry, " <index>: <principal>[ inherited] <allow|deny> <names>", where
// <names> lists the permissions and then the inheritance flags, comma-separated.
//
// ls shows a principal as "user:<name>" or "group:<name>" when the directory service
// resolves it, else as its UUID. A UUID of the fixed form macOS derives from a bare
// uid (FFFFEEEE-DDDD-CCCC-BBBB-AAAA<uid in hex>) or gid
// (ABCDEFAB-CDEF-ABCD-EFAB-CDEF<gid in hex>) is shown here as "user:#<uid>" or
// "group:#<gid>"; any other UUID is kept as it is.
//
// Anything unexpected (no listing line, an entry line that does not parse, indexes
// that do not increase, an entry type other than allow or deny, a name ls would never
// print) rejects the whole output; no partial list is returned.
func ParseLsACL(out string) (LsListing, error) {
	var l LsListing
	out = strings.TrimSuffix(out, "\n")
	if out == "" {
		return l, fmt.Errorf("%w: empty", ErrBadListing)
	}
	lines := strings.Split(out, "\n")
	fields := strings.Fields(lines[0])
	if len(fields) < 2 {
		return l, fmt.Errorf("%w: listing line %q", ErrBadListing, lines[0])
	}
	ino, err := strconv.ParseUint(fields[0], 10, 64)
	if err != nil {
		return l, fmt.Errorf("%w: inode %q", ErrBadListing, fields[0])
	}
	mode := fields[1]
	if len(mode) < 10 || !strings.ContainsRune("-dlpcbsw", rune(mode[0])) {
		return l, fmt.Errorf("%w: mode %q", ErrBadListing, mode)
	}
	l.Inode, l.FileType = ino, mode[0]
	last := -1
	for _, line := range lines[1:] {
		idx, e, err := parseLsEntry(line)
		if err != nil {
			return LsListing{}, err
		}
		// ls counts entries it could not print too, so indexes can skip but never
		// repeat or go back; a line that breaks the order is not an entry ls wrote.
		if idx <= last {
			return LsListing{}, fmt.Errorf("%w: entry index %d after %d", ErrBadListing, idx, last)
		}
		last = idx
		l.Entries = append(l.Entries, e)
	}
	return l, nil
}

func parseLsEntry(line string) (int, MacACE, error) {
	var e MacACE
	bad := func(why string) (int, MacACE, error) {
		return 0, MacACE{}, fmt.Errorf("%w: entry %q: %s", ErrBadListing, line, why)
	}
	rest := strings.TrimLeft(line, " ")
	colon := strings.Index(rest, ": ")
	if colon <= 0 {
		return bad("no index")
	}
	idx, err := strconv.Atoi(rest[:colon])
	if err != nil || idx < 0 {
		return bad("bad index")
	}
	rest = rest[colon+2:]
	// From the right: the names (possibly empty), the type, an optional
	// " inherited", and the principal, which may itself contain spaces.
	sp := strings.LastIndexByte(rest, ' ')
	if sp < 0 {
		return bad("no entry type")
	}
	names := rest[sp+1:]
	rest = rest[:sp]
	sp = strings.LastIndexByte(rest, ' ')
	if sp < 0 {
		return bad("no principal")
	}
	e.Type = rest[sp+1:]
	if e.Type != "allow" && e.Type != "deny" {
		return bad("entry type is not allow or deny")
	}
	principal := rest[:sp]
	if p, ok := strings.CutSuffix(principal, " inherited"); ok {
		principal = p
		e.Flags = append(e.Flags, "inherited")
	}
	if principal == "" {
		return bad("empty principal")
	}
	e.Principal = macPrincipal(principal)
	if names != "" {
		for _, n := range strings.Split(names, ",") {
			if !isLsName(n) {
				return bad(fmt.Sprintf("permission name %q", n))
			}
			if macEntryFlags[n] {
				e.Flags = append(e.Flags, n)
			} else {
				e.Perms = append(e.Perms, n)
			}
		}
	}
	return idx, e, nil
}

func isLsName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '_' && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}

// macPrincipal maps the uid- and gid-derived UUIDs to "user:#<uid>" and
// "group:#<gid>", the spelling upstream uses for an id without a name.
func macPrincipal(p string) string {
	const userPrefix, groupPrefix = "FFFFEEEE-DDDD-CCCC-BBBB-AAAA", "ABCDEFAB-CDEF-ABCD-EFAB-CDEF"
	if len(p) != 36 {
		return p
	}
	for _, c := range []struct{ prefix, kind string }{{userPrefix, "user"}, {groupPrefix, "group"}} {
		if hex, ok := strings.CutPrefix(strings.ToUpper(p), c.prefix); ok {
			if id, err := strconv.ParseUint(hex, 16, 32); err == nil {
				return c.kind + ":#" + strconv.FormatUint(id, 10)
			}
		}
	}
	return p
}

// MacInfo is what the macOS reader collected about one file.
type MacInfo struct {
	Owner, Group string
	Mode         uint32 // st_mode
	Entries      []MacACE
}

// MacRows builds the get_acl rows for a macOS file: owner, group, permissions,
// mode, acl (extended when the file has ACL entries, none otherwise; the ACL-level
// flags are not shown by ls and are always "-"), then one ace row per entry.
func MacRows(info MacInfo) []Row {
	rows := statRows(info.Owner, info.Group, info.Mode)
	status := StatusNone
	if len(info.Entries) > 0 {
		status = StatusExtended
	}
	rows = append(rows, newRow("acl", status, "-"))
	for _, e := range info.Entries {
		rows = append(rows, newRow("ace", e.Type, e.Principal,
			dash(strings.Join(e.Perms, ",")), dash(strings.Join(e.Flags, ","))))
	}
	return rows
}
