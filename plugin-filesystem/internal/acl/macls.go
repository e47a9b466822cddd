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
	Principal string   // "user:<name>", "group:<name>", "user:#<uid>", "group:#<gid>" or a UUID; "" when not read
	Type      string   // "allow", "deny", or "unknown" for an entry that was not understood
	Perms     []string // ls's permission names in its order
	Flags     []string // inherited, file_inherit, directory_inherit, limit_inherit, only_inherit
	// Text and Problem are set on an unknown entry only: Text is what ls printed
	// after the principal and type (the whole entry when those could not be told
	// apart), Problem says what was not understood.
	Text, Problem string
}

// LsListing is what ParseLsACL reads from the output of `ls -l -e -d -i -q -- <path>`.
type LsListing struct {
	Inode    uint64 // the listed file's inode, to tie the answer to the file examined
	FileType byte   // first character of the mode string: '-', 'd', 'l', 'p', 'c', 'b', 's'
	Entries  []MacACE
}

// The names ls prints for an entry, in its order: permissions (files and
// directories spell some differently) and then the inheritance flags. A name not in
// these lists is not understood.
var (
	macPermNames = map[string]bool{
		"read": true, "list": true, "write": true, "add_file": true, "execute": true, "search": true,
		"delete": true, "append": true, "add_subdirectory": true, "delete_child": true,
		"readattr": true, "writeattr": true, "readextattr": true, "writeextattr": true,
		"readsecurity": true, "writesecurity": true, "chown": true, "synchronize": true,
	}
	macEntryFlags = map[string]bool{
		"file_inherit": true, "directory_inherit": true, "limit_inherit": true, "only_inherit": true,
	}
)

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
// An entry line whose content is not understood (an entry type other than allow or
// deny, a permission or flag name ls is not known to print, no principal) is kept as
// an entry of type "unknown" that says what was not understood, and the entries
// around it are read as usual: one strange entry does not hide the others. The
// output is rejected as a whole only when it is not one listing: no listing line, a
// line that is not an entry (no "<index>: "), or indexes that do not increase.
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
	entries, err := parseLsEntries(lines[1:])
	if err != nil {
		return l, err
	}
	l.Inode, l.FileType, l.Entries = ino, mode[0], entries
	return l, nil
}

// parseLsEntries reads the ACL entry lines that follow ls's listing line.
func parseLsEntries(lines []string) ([]MacACE, error) {
	var entries []MacACE
	last := -1
	for _, line := range lines {
		idx, e, err := parseLsEntry(line)
		if err != nil {
			return nil, err
		}
		// ls counts entries it could not print too, so indexes can skip but never
		// repeat or go back; a line that breaks the order is not an entry ls wrote.
		if idx <= last {
			return nil, fmt.Errorf("%w: entry index %d after %d", ErrBadListing, idx, last)
		}
		last = idx
		entries = append(entries, e)
	}
	return entries, nil
}

// parseLsEntry reads one entry line. An error means the line is not an entry line at
// all; an entry line whose content is not understood comes back as an unknown entry.
func parseLsEntry(line string) (int, MacACE, error) {
	rest := strings.TrimLeft(line, " ")
	colon := strings.Index(rest, ": ")
	if colon <= 0 {
		return 0, MacACE{}, fmt.Errorf("%w: entry %q: no index", ErrBadListing, line)
	}
	idx, err := strconv.Atoi(rest[:colon])
	if err != nil || idx < 0 {
		return 0, MacACE{}, fmt.Errorf("%w: entry %q: bad index", ErrBadListing, line)
	}
	body := rest[colon+2:]
	unknown := func(principal, text, why string) (int, MacACE, error) {
		return idx, MacACE{Principal: principal, Type: "unknown", Text: text, Problem: why}, nil
	}
	// The type is the last " allow " or " deny " (or the line's end after one): the
	// principal before it may hold blanks, the names after it never do.
	typ, principal, names, ok := splitLsEntry(body)
	if !ok {
		return unknown("", body, "entry type is not allow or deny")
	}
	var e MacACE
	e.Type = typ
	if p, ok := strings.CutSuffix(principal, " inherited"); ok {
		principal = p
		e.Flags = append(e.Flags, "inherited")
	}
	if principal == "" {
		return unknown("", body, "no principal")
	}
	e.Principal = macPrincipal(principal)
	if names != "" {
		for _, n := range strings.Split(names, ",") {
			switch {
			case macEntryFlags[n]:
				e.Flags = append(e.Flags, n)
			case macPermNames[n]:
				e.Perms = append(e.Perms, n)
			default:
				return unknown(e.Principal, typ+" "+names, fmt.Sprintf("permission name %q", n))
			}
		}
	}
	return idx, e, nil
}

// splitLsEntry splits "<principal> <allow|deny> <names>" at the last " allow " or
// " deny ", or at a final " allow" or " deny" with no names after it.
func splitLsEntry(body string) (typ, principal, names string, ok bool) {
	best := -1
	for _, t := range []string{"allow", "deny"} {
		if i := strings.LastIndex(body, " "+t+" "); i > best {
			best, typ = i, t
		}
	}
	if best >= 0 {
		return typ, body[:best], body[best+len(typ)+2:], true
	}
	for _, t := range []string{"allow", "deny"} {
		if p, found := strings.CutSuffix(body, " "+t); found {
			return t, p, "", true
		}
	}
	return "", "", "", false
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
// flags are not shown by ls and are always "-"), then one ace row per entry. An entry
// that was not understood is the row ace|unknown|<principal, or ->|<what ls printed
// after the principal, or the whole entry>|-, in its place among the others, so it is
// neither dropped nor guessed at.
func MacRows(info MacInfo) []Row {
	rows := statRows(info.Owner, info.Group, info.Mode)
	status := StatusNone
	if len(info.Entries) > 0 {
		status = StatusExtended
	}
	rows = append(rows, newRow("acl", status, "-"))
	for _, e := range info.Entries {
		if e.Type == "unknown" {
			rows = append(rows, newRow("ace", "unknown", dash(e.Principal), dash(e.Text), "-"))
			continue
		}
		rows = append(rows, newRow("ace", e.Type, e.Principal,
			dash(strings.Join(e.Perms, ",")), dash(strings.Join(e.Flags, ","))))
	}
	return rows
}
