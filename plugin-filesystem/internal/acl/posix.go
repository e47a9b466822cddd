package acl

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Tags of POSIX ACL entries as stored in the system.posix_acl_* extended attributes.
const (
	TagUserObj  = 0x01 // the owning user
	TagUser     = 0x02 // a named user
	TagGroupObj = 0x04 // the owning group
	TagGroup    = 0x08 // a named group
	TagMask     = 0x10 // the upper bound for group-class entries
	TagOther    = 0x20 // everyone else
)

// posixACLVersion is the only layout version Linux writes.
const posixACLVersion = 2

// POSIXEntry is one entry of a POSIX ACL. ID is a uid or gid for TagUser and
// TagGroup and meaningless otherwise.
type POSIXEntry struct {
	Tag  uint16
	Perm uint16
	ID   uint32
}

// ErrBadPOSIXACL is wrapped by ParsePOSIX's errors.
var ErrBadPOSIXACL = errors.New("malformed POSIX ACL attribute")

// ParsePOSIX decodes the value of a system.posix_acl_access or
// system.posix_acl_default attribute: a little-endian 4-byte version that must be 2,
// then 8-byte entries (2-byte tag, 2-byte permission bits, 4-byte id). Any defect (a
// short or ragged blob, another version, an unknown tag) rejects the whole blob; no
// partial list is ever returned. A blob with the header and no entries is a valid ACL
// with zero entries.
func ParsePOSIX(blob []byte) ([]POSIXEntry, error) {
	if len(blob) < 4 {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the header", ErrBadPOSIXACL, len(blob))
	}
	if (len(blob)-4)%8 != 0 {
		return nil, fmt.Errorf("%w: %d bytes is not a header plus whole entries", ErrBadPOSIXACL, len(blob))
	}
	if v := binary.LittleEndian.Uint32(blob); v != posixACLVersion {
		return nil, fmt.Errorf("%w: version %d", ErrBadPOSIXACL, v)
	}
	entries := make([]POSIXEntry, 0, (len(blob)-4)/8)
	for off := 4; off < len(blob); off += 8 {
		e := POSIXEntry{
			Tag:  binary.LittleEndian.Uint16(blob[off:]),
			Perm: binary.LittleEndian.Uint16(blob[off+2:]),
			ID:   binary.LittleEndian.Uint32(blob[off+4:]),
		}
		switch e.Tag {
		case TagUserObj, TagUser, TagGroupObj, TagGroup, TagMask, TagOther:
		default:
			return nil, fmt.Errorf("%w: entry %d has unknown tag 0x%x", ErrBadPOSIXACL, (off-4)/8, e.Tag)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// ACL states of the acl row on Linux and macOS.
const (
	StatusNone        = "none"
	StatusExtended    = "extended"
	StatusUnsupported = "unsupported"
)

// POSIXInfo is what the Linux reader collected about one file.
type POSIXInfo struct {
	Owner, Group string // names, or numeric ids when they do not resolve
	Mode         uint32 // st_mode
	Status       string // StatusNone, StatusExtended or StatusUnsupported
	Access       []POSIXEntry
	Default      []POSIXEntry // directories only
}

// POSIXRows builds the get_acl rows for a Linux file: owner, group, permissions,
// mode, acl, then one ace row per access entry (flags "-") followed by one per
// default entry (flags "default"). name resolves the id of a named user or group
// entry; the owner, owning group, mask and other entries have no principal ("-").
func POSIXRows(info POSIXInfo, name func(tag uint16, id uint32) string) []Row {
	rows := statRows(info.Owner, info.Group, info.Mode)
	rows = append(rows, newRow("acl", info.Status, "-"))
	for _, list := range []struct {
		entries []POSIXEntry
		flags   string
	}{{info.Access, "-"}, {info.Default, "default"}} {
		for _, e := range list.entries {
			principal := "-"
			if e.Tag == TagUser || e.Tag == TagGroup {
				principal = dash(name(e.Tag, e.ID))
			}
			rows = append(rows, newRow("ace", posixType(e.Tag), principal, rwx(e.Perm), list.flags))
		}
	}
	return rows
}

func posixType(tag uint16) string {
	switch tag {
	case TagUserObj, TagUser:
		return "user"
	case TagGroupObj, TagGroup:
		return "group"
	case TagMask:
		return "mask"
	}
	return "other"
}

func rwx(perm uint16) string {
	b := []byte("---")
	if perm&4 != 0 {
		b[0] = 'r'
	}
	if perm&2 != 0 {
		b[1] = 'w'
	}
	if perm&1 != 0 {
		b[2] = 'x'
	}
	return string(b)
}
