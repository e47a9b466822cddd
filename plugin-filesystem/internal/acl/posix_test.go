package acl

import (
	"encoding/binary"
	"errors"
	"reflect"
	"strconv"
	"testing"
)

// posixBlob encodes entries the way the kernel stores them.
func posixBlob(version uint32, entries ...POSIXEntry) []byte {
	b := binary.LittleEndian.AppendUint32(nil, version)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, e.Tag)
		b = binary.LittleEndian.AppendUint16(b, e.Perm)
		b = binary.LittleEndian.AppendUint32(b, e.ID)
	}
	return b
}

const undefinedID = 0xFFFFFFFF

// sampleACL is the ACL of the upstream Linux sample (user::rw-, user:1001:rw-,
// group::r--, group:1002:r-x, mask::rwx, other::r--).
var sampleACL = []POSIXEntry{
	{TagUserObj, 6, undefinedID}, {TagUser, 6, 1001}, {TagGroupObj, 4, undefinedID},
	{TagGroup, 5, 1002}, {TagMask, 7, undefinedID}, {TagOther, 4, undefinedID},
}

func TestParsePOSIX(t *testing.T) {
	tests := []struct {
		name string
		blob []byte
		want []POSIXEntry
		ok   bool
	}{
		{"upstream sample ACL", posixBlob(2, sampleACL...), sampleACL, true},
		{"header only is an empty ACL", posixBlob(2), []POSIXEntry{}, true},
		{"minimal", posixBlob(2, POSIXEntry{TagUserObj, 7, undefinedID}, POSIXEntry{TagGroupObj, 5, undefinedID},
			POSIXEntry{TagOther, 0, undefinedID}), []POSIXEntry{{TagUserObj, 7, undefinedID},
			{TagGroupObj, 5, undefinedID}, {TagOther, 0, undefinedID}}, true},
		{"extra permission bits are kept", posixBlob(2, POSIXEntry{TagOther, 0xffff, 0}), []POSIXEntry{{TagOther, 0xffff, 0}}, true},
		{"empty", nil, nil, false},
		{"three bytes", []byte{2, 0, 0}, nil, false},
		{"version 1", posixBlob(1, sampleACL...), nil, false},
		{"version 3", posixBlob(3), nil, false},
		{"big-endian version", []byte{0, 0, 0, 2}, nil, false},
		{"ragged by one byte", append(posixBlob(2, sampleACL...), 0), nil, false},
		{"truncated entry", posixBlob(2, sampleACL...)[:4+8*2+5], nil, false},
		{"unknown tag 0x40", posixBlob(2, POSIXEntry{TagUserObj, 6, 0}, POSIXEntry{0x40, 6, 0}), nil, false},
		{"tag 0", posixBlob(2, POSIXEntry{0, 6, 0}), nil, false},
		{"two tags at once", posixBlob(2, POSIXEntry{TagUser | TagGroup, 6, 0}), nil, false},
	}
	for _, tc := range tests {
		got, err := ParsePOSIX(tc.blob)
		if tc.ok {
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s: got %v, %v; want %v", tc.name, got, err, tc.want)
			}
			continue
		}
		if !errors.Is(err, ErrBadPOSIXACL) || got != nil {
			t.Errorf("%s: got %v, %v; want a rejection", tc.name, got, err)
		}
	}
}

func numericName(_ uint16, id uint32) string { return strconv.FormatUint(uint64(id), 10) }

func TestPOSIXRows(t *testing.T) {
	// The upstream Linux sample: the mask shows in the group bits of the mode.
	got := POSIXRows(POSIXInfo{
		Owner: "root", Group: "root", Mode: 0o100674, Status: StatusExtended, Access: sampleACL,
	}, numericName)
	want := []Row{
		newRow("owner", "root"), newRow("group", "root"), newRow("permissions", "rw-rwxr--"), newRow("mode", "0674"),
		newRow("acl", "extended", "-"),
		newRow("ace", "user", "-", "rw-", "-"), newRow("ace", "user", "1001", "rw-", "-"),
		newRow("ace", "group", "-", "r--", "-"), newRow("ace", "group", "1002", "r-x", "-"),
		newRow("ace", "mask", "-", "rwx", "-"), newRow("ace", "other", "-", "r--", "-"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("upstream sample rows:\n got %v\nwant %v", got, want)
	}

	// A directory: access entries first, then default entries.
	got = POSIXRows(POSIXInfo{
		Owner: "alice", Group: "staff", Mode: 0o43775, Status: StatusExtended,
		Access: []POSIXEntry{{TagUserObj, 7, 0}, {TagGroupObj, 7, 0}, {TagOther, 5, 0}},
		Default: []POSIXEntry{{TagUserObj, 7, 0}, {TagGroup, 7, 50}, {TagGroupObj, 5, 0},
			{TagMask, 7, 0}, {TagOther, 0, 0}},
	}, func(tag uint16, id uint32) string {
		if tag == TagGroup && id == 50 {
			return "deploy"
		}
		return ""
	})
	want = []Row{
		newRow("owner", "alice"), newRow("group", "staff"), newRow("permissions", "rwxrwxr-x"), newRow("mode", "3775"),
		newRow("acl", "extended", "-"),
		newRow("ace", "user", "-", "rwx", "-"), newRow("ace", "group", "-", "rwx", "-"), newRow("ace", "other", "-", "r-x", "-"),
		newRow("ace", "user", "-", "rwx", "default"), newRow("ace", "group", "deploy", "rwx", "default"),
		newRow("ace", "group", "-", "r-x", "default"), newRow("ace", "mask", "-", "rwx", "default"),
		newRow("ace", "other", "-", "---", "default"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("directory rows:\n got %v\nwant %v", got, want)
	}

	// A header-only blob is an ACL with no entries: extended, no ace rows.
	entries, err := ParsePOSIX(posixBlob(2))
	if err != nil {
		t.Fatal(err)
	}
	got = POSIXRows(POSIXInfo{Owner: "0", Group: "0", Mode: 0o100600, Status: StatusExtended, Access: entries}, numericName)
	want = []Row{newRow("owner", "0"), newRow("group", "0"), newRow("permissions", "rw-------"), newRow("mode", "0600"),
		newRow("acl", "extended", "-")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("header-only rows:\n got %v\nwant %v", got, want)
	}

	// Unsupported and none carry no ace rows; an unresolvable name prints "-".
	got = POSIXRows(POSIXInfo{Owner: "1", Group: "1", Mode: 0o4755, Status: StatusUnsupported}, numericName)
	if !reflect.DeepEqual(got[4], newRow("acl", "unsupported", "-")) || len(got) != 5 || !reflect.DeepEqual(got[2], newRow("permissions", "rwxr-xr-x")) || !reflect.DeepEqual(got[3], newRow("mode", "4755")) {
		t.Errorf("unsupported rows: %v", got)
	}
	got = POSIXRows(POSIXInfo{Status: StatusExtended, Access: []POSIXEntry{{TagUser, 4, 7}}},
		func(uint16, uint32) string { return "" })
	if !reflect.DeepEqual(got[5], newRow("ace", "user", "-", "r--", "-")) {
		t.Errorf("empty name: %v", got[5])
	}
}

func FuzzParsePOSIX(f *testing.F) {
	f.Add(posixBlob(2, sampleACL...))
	f.Add(posixBlob(2))
	f.Add([]byte{2, 0, 0, 0, 0x40, 0})
	f.Fuzz(func(t *testing.T, blob []byte) {
		entries, err := ParsePOSIX(blob)
		if err != nil {
			if entries != nil {
				t.Fatalf("rejected blob returned %d entries", len(entries))
			}
			return
		}
		// An accepted blob is exactly the encoding of what was returned.
		if got := posixBlob(2, entries...); string(got) != string(blob) {
			t.Fatalf("round trip: %x became %x", blob, got)
		}
		POSIXRows(POSIXInfo{Status: StatusExtended, Access: entries, Default: entries}, numericName)
	})
}
