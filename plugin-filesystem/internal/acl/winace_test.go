package acl

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

// sidBytes builds a binary SID: revision 1, the authority as 6 big-endian bytes, then
// the sub-authorities little-endian.
func sidBytes(auth uint64, subs ...uint32) []byte {
	b := []byte{1, byte(len(subs))}
	for i := 5; i >= 0; i-- {
		b = append(b, byte(auth>>(8*i)))
	}
	for _, s := range subs {
		b = binary.LittleEndian.AppendUint32(b, s)
	}
	return b
}

// aceBytes builds an entry with its size field filled in.
func aceBytes(typ, flags byte, body ...[]byte) []byte {
	b := []byte{typ, flags, 0, 0}
	for _, p := range body {
		b = append(b, p...)
	}
	binary.LittleEndian.PutUint16(b[2:], uint16(len(b)))
	return b
}

func aclBytesOf(aces ...[]byte) []byte {
	b := []byte{2, 0, 0, 0, 0, 0, 0, 0}
	for _, a := range aces {
		b = append(b, a...)
	}
	binary.LittleEndian.PutUint16(b[2:], uint16(len(b)))
	binary.LittleEndian.PutUint16(b[4:], uint16(len(aces)))
	return b
}

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func guid(fill byte) []byte {
	g := make([]byte, 16)
	for i := range g {
		g[i] = fill
	}
	return g
}

var (
	everyone = sidBytes(1, 0)
	admins   = sidBytes(5, 32, 544)
	user1001 = sidBytes(5, 21, 1004336348, 1177238915, 682003330, 1001)
)

func TestDecodeACE(t *testing.T) {
	tests := []struct {
		name  string
		b     []byte
		want  WinACE
		sid   string
		flags string
	}{
		{"allow Everyone", aceBytes(0, 0, le32(0x001f01ff), everyone),
			WinACE{Type: 0, Mask: 0x001f01ff, SID: everyone, Decoded: true}, "S-1-1-0", "-"},
		{"deny inherited container entry", aceBytes(1, 0x01|0x02|0x10, le32(0x00010000), admins),
			WinACE{Type: 1, Flags: 0x13, Mask: 0x00010000, SID: admins, Decoded: true}, "S-1-5-32-544",
			"object_inherit,container_inherit,inherited"},
		{"every flag", aceBytes(0, 0x1f, le32(1), everyone),
			WinACE{Type: 0, Flags: 0x1f, Mask: 1, SID: everyone, Decoded: true}, "S-1-1-0",
			"object_inherit,container_inherit,no_propagate,inherit_only,inherited"},
		{"object entry without GUIDs", aceBytes(5, 0, le32(0x100), le32(0), user1001),
			WinACE{Type: 5, Mask: 0x100, SID: user1001, Decoded: true}, "S-1-5-21-1004336348-1177238915-682003330-1001", "-"},
		{"object entry with object type", aceBytes(5, 0, le32(0x100), le32(1), guid(0xAA), admins),
			WinACE{Type: 5, Mask: 0x100, SID: admins, Decoded: true}, "S-1-5-32-544", "-"},
		{"object entry with inherited object type", aceBytes(6, 0, le32(0x20), le32(2), guid(0xBB), everyone),
			WinACE{Type: 6, Mask: 0x20, SID: everyone, Decoded: true}, "S-1-1-0", "-"},
		{"object entry with both GUIDs", aceBytes(6, 0x08, le32(0x20), le32(3), guid(0xAA), guid(0xBB), admins),
			WinACE{Type: 6, Flags: 0x08, Mask: 0x20, SID: admins, Decoded: true}, "S-1-5-32-544", "inherit_only"},
		{"conditional entry with its condition after the SID",
			aceBytes(9, 0, le32(0x001f01ff), everyone, []byte("artx\xfb\x04\x00\x00\x00\x00\x00\x00")),
			WinACE{Type: 9, Mask: 0x001f01ff, SID: everyone, Decoded: true}, "S-1-1-0", "-"},
		{"mandatory label is other", aceBytes(0x11, 0, le32(1), sidBytes(16, 12288)),
			WinACE{Type: 0x11}, "", "-"},
		{"audit is other", aceBytes(2, 0x40, le32(1), everyone), WinACE{Type: 2, Flags: 0x40}, "", "-"},
		{"other type with only a header", []byte{0x07, 0x10, 4, 0}, WinACE{Type: 7, Flags: 0x10}, "", "inherited"},
	}
	for _, tc := range tests {
		got, err := DecodeACE(tc.b)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, %v; want %+v", tc.name, got, err, tc.want)
			continue
		}
		if tc.sid != "" && SIDString(got.SID) != tc.sid {
			t.Errorf("%s: SID %s, want %s", tc.name, SIDString(got.SID), tc.sid)
		}
		if f := aceFlagNames(got.Flags); f != tc.flags {
			t.Errorf("%s: flags %q, want %q", tc.name, f, tc.flags)
		}
	}
}

func TestDecodeACERejects(t *testing.T) {
	badRevision := append([]byte{2}, everyone[1:]...)
	sixteen := sidBytes(5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)
	tests := map[string][]byte{
		"three bytes":                        {0, 0, 3},
		"size below the header":              {0, 0, 2, 0, 0, 0, 0, 0},
		"size beyond the buffer":             {0, 0, 40, 0, 0, 0, 0, 0},
		"allow without a mask":               {0, 0, 6, 0, 1, 2},
		"allow without a SID":                aceBytes(0, 0, le32(1)),
		"SID revision 2":                     aceBytes(0, 0, le32(1), badRevision),
		"16 sub-authorities":                 aceBytes(0, 0, le32(1), sixteen),
		"SID longer than the entry":          aceBytes(0, 0, le32(1), admins[:12]),
		"object entry too short for flags":   aceBytes(5, 0, le32(1), []byte{1, 0}),
		"object GUID pushes SID past end":    aceBytes(5, 0, le32(1), le32(1), admins),
		"object both GUIDs, one present":     aceBytes(6, 0, le32(1), le32(3), guid(1), everyone),
		"conditional with truncated SID":     aceBytes(9, 0, le32(1), everyone[:7]),
		"SID count claims more than present": aceBytes(1, 0, le32(1), append([]byte{1, 3}, everyone[2:]...)),
	}
	for name, b := range tests {
		got, err := DecodeACE(b)
		if !errors.Is(err, ErrBadACE) || got.SID != nil || got.Decoded {
			t.Errorf("%s: got %+v, %v; want a rejection", name, got, err)
		}
	}
}

func TestParseWinACL(t *testing.T) {
	good := aclBytesOf(
		aceBytes(0, 0x10, le32(0x001f01ff), admins),
		aceBytes(1, 0, le32(0x00000004), user1001),
		aceBytes(0x11, 0, le32(1), sidBytes(16, 8192)),
	)
	aces, err := ParseWinACL(good)
	if err != nil || len(aces) != 3 || !aces[0].Decoded || aces[2].Decoded || aces[1].Mask != 4 {
		t.Fatalf("good ACL: %+v, %v", aces, err)
	}
	if aces, err := ParseWinACL(aclBytesOf()); err != nil || len(aces) != 0 {
		t.Errorf("empty ACL: %+v, %v", aces, err)
	}
	// Extra bytes after the declared size are ignored.
	if aces, err := ParseWinACL(append(good, 0xde, 0xad)); err != nil || len(aces) != 3 {
		t.Errorf("ACL with trailing bytes: %+v, %v", aces, err)
	}

	withCount := func(b []byte, n uint16) []byte {
		c := append([]byte(nil), b...)
		binary.LittleEndian.PutUint16(c[4:], n)
		return c
	}
	withSize := func(b []byte, n uint16) []byte {
		c := append([]byte(nil), b...)
		binary.LittleEndian.PutUint16(c[2:], n)
		return c
	}
	zeroSizeACE := aclBytesOf([]byte{0, 0, 0, 0})
	bad := map[string][]byte{
		"short header":                   {2, 0, 8, 0},
		"declared size beyond buffer":    withSize(good, uint16(len(good)+4)),
		"declared size below header":     withSize(good, 4),
		"count beyond the entries":       withCount(good, 4),
		"entry cut by the declared size": withSize(good, uint16(len(good)-2)),
		"entry of size zero":             zeroSizeACE,
		"bad entry inside":               aclBytesOf(aceBytes(0, 0, le32(1), everyone), aceBytes(0, 0, le32(1), admins[:9])),
	}
	for name, b := range bad {
		if aces, err := ParseWinACL(b); !errors.Is(err, ErrBadACE) || aces != nil {
			t.Errorf("%s: got %+v, %v; want a rejection", name, aces, err)
		}
	}
}

func TestSIDString(t *testing.T) {
	tests := []struct {
		sid  []byte
		want string
	}{
		{everyone, "S-1-1-0"},
		{admins, "S-1-5-32-544"},
		{user1001, "S-1-5-21-1004336348-1177238915-682003330-1001"},
		{sidBytes(5), "S-1-5"},
		{sidBytes(0xFFFFFFFF, 1), "S-1-4294967295-1"},
		{sidBytes(0x123456789ABC, 7), "S-1-0x123456789ABC-7"},
		{[]byte{1, 1, 0, 0, 0, 0, 0, 5}, "-"}, // claims a sub-authority it does not have
		{nil, "-"},
	}
	for _, tc := range tests {
		if got := SIDString(tc.sid); got != tc.want {
			t.Errorf("SIDString(%x) = %q, want %q", tc.sid, got, tc.want)
		}
	}
}

func TestWindowsRows(t *testing.T) {
	// The upstream Windows sample: a conditional entry for Everyone on a protected,
	// auto-inherited DACL.
	aces, err := ParseWinACL(aclBytesOf(
		aceBytes(9, 0, le32(0x001f01ff), everyone, []byte("artx\x00\x00\x00\x00")),
	))
	if err != nil {
		t.Fatal(err)
	}
	names := func(sid []byte) string {
		if SIDString(sid) == "S-1-1-0" {
			return `\Everyone`
		}
		return ""
	}
	const control = 0x8000 | 0x1000 | 0x0400 | 0x0004 // self-relative, protected, auto-inherited, DACL present
	got := WindowsRows("O:BAD:PAI(XA;;FA;;;WD;(Member_of {SID(BA)}))", control, aces, names)
	want := []Row{
		newRow("sddl", "O:BAD:PAI(XA;;FA;;;WD;(Member_of {SID(BA)}))"),
		newRow("control", "protected,auto_inherited"),
		newRow("ace", "allow_conditional", `\Everyone`, "0x001f01ff", "-"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("upstream sample:\n got %v\nwant %v", got, want)
	}

	aces, err = ParseWinACL(aclBytesOf(
		aceBytes(0, 0x03, le32(0x1200a9), admins),
		aceBytes(6, 0x10, le32(0x10), le32(1), guid(7), user1001),
		aceBytes(0x0b, 0x02, le32(1), everyone),
	))
	if err != nil {
		t.Fatal(err)
	}
	got = WindowsRows("O:BA", 0x0004, aces, func(sid []byte) string {
		if SIDString(sid) == "S-1-5-32-544" {
			return `BUILTIN\Administrators`
		}
		return ""
	})
	want = []Row{
		newRow("sddl", "O:BA"), newRow("control", "-"),
		newRow("ace", "allow", `BUILTIN\Administrators`, "0x001200a9", "object_inherit,container_inherit"),
		newRow("ace", "deny_object", "S-1-5-21-1004336348-1177238915-682003330-1001", "0x00000010", "inherited"),
		newRow("ace", "other", "-", "-", "container_inherit"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mixed entries:\n got %v\nwant %v", got, want)
	}
	for c, w := range map[uint16]string{0x1000: "protected", 0x0400: "auto_inherited", 0: "-", 0x2000: "-"} {
		if g := controlFlagNames(c); g != w {
			t.Errorf("controlFlagNames(%#x) = %q, want %q", c, g, w)
		}
	}
}

func FuzzParseWinACL(f *testing.F) {
	f.Add(aclBytesOf(aceBytes(0, 0x13, le32(0x1f01ff), admins), aceBytes(6, 0, le32(1), le32(3), guid(1), guid(2), everyone)))
	f.Add(aclBytesOf(aceBytes(9, 0, le32(1), everyone, []byte("artx")), aceBytes(0x11, 0, le32(1))))
	f.Add([]byte{2, 0, 8, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		aces, err := ParseWinACL(b)
		if err != nil {
			if aces != nil {
				t.Fatalf("rejected ACL returned %d entries", len(aces))
			}
			return
		}
		for _, a := range aces {
			if a.Decoded && SIDString(a.SID) == "-" {
				t.Fatalf("accepted an entry with a malformed SID: %+v", a)
			}
		}
		WindowsRows("", 0, aces, func([]byte) string { return "" })
	})
}

func FuzzDecodeACE(f *testing.F) {
	f.Add(aceBytes(5, 0, le32(0x100), le32(1), guid(0xAA), admins))
	f.Add(aceBytes(0, 0, le32(1), everyone))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeACE(b)
		if err != nil {
			if a.SID != nil || a.Decoded {
				t.Fatalf("rejected entry returned %+v", a)
			}
			return
		}
		if a.Decoded && len(a.SID) > len(b) {
			t.Fatalf("SID longer than the entry")
		}
	})
}
