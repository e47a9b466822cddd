package acl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBadACE is wrapped by the Windows ACL decoding errors.
var ErrBadACE = errors.New("malformed access control entry")

// ACE type bytes the rows name; every other type is "other".
const (
	aceAllowed         = 0x00
	aceDenied          = 0x01
	aceAllowedObject   = 0x05
	aceDeniedObject    = 0x06
	aceAllowedCallback = 0x09 // conditional ACE (its condition follows the SID)
	aceDeniedCallback  = 0x0A
)

// Object ACE flags saying which GUIDs precede the SID.
const (
	aceObjectTypePresent          = 0x1
	aceInheritedObjectTypePresent = 0x2
)

// WinACE is one decoded DACL entry. For a type the rows do not decode ("other"),
// only Type and Flags are set.
type WinACE struct {
	Type    byte
	Flags   byte
	Mask    uint32
	SID     []byte // the trustee's binary SID, inside the ACE's bytes; nil for "other"
	Decoded bool   // Mask and SID are meaningful
}

// ParseWinACL decodes a binary ACL: an 8-byte header (revision, padding, 2-byte size,
// 2-byte entry count, padding) followed by the entries. The declared size must fit in
// b and every entry must fit in the declared size. Any defect rejects the whole ACL.
func ParseWinACL(b []byte) ([]WinACE, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("%w: ACL of %d bytes is shorter than its header", ErrBadACE, len(b))
	}
	size := int(binary.LittleEndian.Uint16(b[2:]))
	count := int(binary.LittleEndian.Uint16(b[4:]))
	if size < 8 || size > len(b) {
		return nil, fmt.Errorf("%w: ACL size %d with %d bytes available", ErrBadACE, size, len(b))
	}
	aces := make([]WinACE, 0, min(count, (size-8)/4))
	off := 8
	for i := 0; i < count; i++ {
		if off+4 > size {
			return nil, fmt.Errorf("%w: entry %d starts past the ACL's end", ErrBadACE, i)
		}
		n := int(binary.LittleEndian.Uint16(b[off+2:]))
		if n < 4 || off+n > size {
			return nil, fmt.Errorf("%w: entry %d has size %d", ErrBadACE, i, n)
		}
		ace, err := DecodeACE(b[off : off+n])
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		aces = append(aces, ace)
		off += n
	}
	return aces, nil
}

// DecodeACE decodes one entry: a 4-byte header (type, flags, 2-byte size), then for
// allow, deny and their conditional forms a 4-byte access mask and the SID at offset
// 8, and for the object forms a mask, 4 bytes of object flags, one 16-byte GUID per
// flag set, then the SID. The SID must be revision 1, have at most 15
// sub-authorities and lie inside the entry's declared size.
func DecodeACE(b []byte) (WinACE, error) {
	if len(b) < 4 {
		return WinACE{}, fmt.Errorf("%w: %d bytes", ErrBadACE, len(b))
	}
	a := WinACE{Type: b[0], Flags: b[1]}
	size := int(binary.LittleEndian.Uint16(b[2:]))
	if size < 4 || size > len(b) {
		return WinACE{}, fmt.Errorf("%w: declared size %d with %d bytes", ErrBadACE, size, len(b))
	}
	b = b[:size]
	sidOff := 8
	switch a.Type {
	case aceAllowed, aceDenied, aceAllowedCallback, aceDeniedCallback:
	case aceAllowedObject, aceDeniedObject:
		if len(b) < 12 {
			return WinACE{}, fmt.Errorf("%w: object entry of %d bytes", ErrBadACE, len(b))
		}
		objFlags := binary.LittleEndian.Uint32(b[8:])
		sidOff = 12
		if objFlags&aceObjectTypePresent != 0 {
			sidOff += 16
		}
		if objFlags&aceInheritedObjectTypePresent != 0 {
			sidOff += 16
		}
	default:
		return a, nil
	}
	if len(b) < 8 {
		return WinACE{}, fmt.Errorf("%w: entry of %d bytes has no access mask", ErrBadACE, len(b))
	}
	a.Mask = binary.LittleEndian.Uint32(b[4:])
	n, err := sidLen(b, sidOff)
	if err != nil {
		return WinACE{}, err
	}
	a.SID = b[sidOff : sidOff+n]
	a.Decoded = true
	return a, nil
}

// sidLen checks the SID at b[off:] and returns its length.
func sidLen(b []byte, off int) (int, error) {
	if off+8 > len(b) {
		return 0, fmt.Errorf("%w: SID at offset %d does not fit in %d bytes", ErrBadACE, off, len(b))
	}
	if rev := b[off]; rev != 1 {
		return 0, fmt.Errorf("%w: SID revision %d", ErrBadACE, rev)
	}
	subs := int(b[off+1])
	if subs > 15 {
		return 0, fmt.Errorf("%w: SID with %d sub-authorities", ErrBadACE, subs)
	}
	n := 8 + 4*subs
	if off+n > len(b) {
		return 0, fmt.Errorf("%w: SID of %d bytes at offset %d does not fit in %d bytes", ErrBadACE, n, off, len(b))
	}
	return n, nil
}

// SIDString formats a binary SID, already checked by DecodeACE, in the S-1-... form:
// the 48-bit authority in decimal, or in hex when it needs more than 32 bits, as
// Windows prints it.
func SIDString(sid []byte) string {
	if _, err := sidLen(sid, 0); err != nil {
		return "-"
	}
	var auth uint64
	for _, c := range sid[2:8] {
		auth = auth<<8 | uint64(c)
	}
	var b strings.Builder
	b.WriteString("S-1-")
	if auth >= 1<<32 {
		fmt.Fprintf(&b, "0x%012X", auth)
	} else {
		b.WriteString(strconv.FormatUint(auth, 10))
	}
	for i := 0; i < int(sid[1]); i++ {
		b.WriteByte('-')
		b.WriteString(strconv.FormatUint(uint64(binary.LittleEndian.Uint32(sid[8+4*i:])), 10))
	}
	return b.String()
}

func aceTypeName(t byte) string {
	switch t {
	case aceAllowed:
		return "allow"
	case aceDenied:
		return "deny"
	case aceAllowedObject:
		return "allow_object"
	case aceDeniedObject:
		return "deny_object"
	case aceAllowedCallback:
		return "allow_conditional"
	case aceDeniedCallback:
		return "deny_conditional"
	}
	return "other"
}

func aceFlagNames(f byte) string {
	var names []string
	for _, fl := range []struct {
		bit  byte
		name string
	}{
		{0x01, "object_inherit"}, {0x02, "container_inherit"}, {0x04, "no_propagate"},
		{0x08, "inherit_only"}, {0x10, "inherited"},
	} {
		if f&fl.bit != 0 {
			names = append(names, fl.name)
		}
	}
	return dash(strings.Join(names, ","))
}

// controlFlagNames names the security descriptor control bits the rows show:
// SE_DACL_PROTECTED, then SE_DACL_AUTO_INHERITED.
func controlFlagNames(c uint16) string {
	var names []string
	if c&0x1000 != 0 {
		names = append(names, "protected")
	}
	if c&0x0400 != 0 {
		names = append(names, "auto_inherited")
	}
	return dash(strings.Join(names, ","))
}

// WindowsRows builds the get_acl rows for a Windows file: sddl, control, then one ace
// row per DACL entry with its access mask in hex. principal names a SID as
// DOMAIN\name (or returns "" to fall back to the S-1-... form). An entry of a type
// the rows do not decode shows "-" for principal and mask.
func WindowsRows(sddl string, control uint16, aces []WinACE, principal func(sid []byte) string) []Row {
	rows := []Row{newRow("sddl", sddl), newRow("control", controlFlagNames(control))}
	for _, a := range aces {
		if !a.Decoded {
			rows = append(rows, newRow("ace", aceTypeName(a.Type), "-", "-", aceFlagNames(a.Flags)))
			continue
		}
		name := principal(a.SID)
		if name == "" {
			name = SIDString(a.SID)
		}
		rows = append(rows, newRow("ace", aceTypeName(a.Type), name, fmt.Sprintf("0x%08x", a.Mask), aceFlagNames(a.Flags)))
	}
	return rows
}
