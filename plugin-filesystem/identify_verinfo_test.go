package main

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
)

// ---- version resources ----

// lookVerNode builds one node of a version resource. valueLen is the declared
// wValueLength (units for text, bytes for binary); children are appended each on a
// 4-byte boundary.
func lookVerNode(key string, text bool, value []byte, valueLen int, children ...[]byte) []byte {
	b := make([]byte, 6)
	for _, u := range utf16.Encode([]rune(key)) {
		b = binary.LittleEndian.AppendUint16(b, u)
	}
	b = append(b, 0, 0)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	b = append(b, value...)
	for _, c := range children {
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		b = append(b, c...)
	}
	binary.LittleEndian.PutUint16(b, uint16(len(b)))
	binary.LittleEndian.PutUint16(b[2:], uint16(valueLen))
	if text {
		binary.LittleEndian.PutUint16(b[4:], 1)
	}
	return b
}

func lookVerString(key, value string) []byte {
	var v []byte
	u := utf16.Encode([]rune(value))
	for _, c := range u {
		v = binary.LittleEndian.AppendUint16(v, c)
	}
	v = append(v, 0, 0)
	return lookVerNode(key, true, v, len(u)+1)
}

func lookFixed(fileMS, fileLS, prodMS, prodLS uint32) []byte {
	v := make([]byte, 52)
	binary.LittleEndian.PutUint32(v, fixedSignature)
	binary.LittleEndian.PutUint32(v[4:], 0x00010000)
	binary.LittleEndian.PutUint32(v[8:], fileMS)
	binary.LittleEndian.PutUint32(v[12:], fileLS)
	binary.LittleEndian.PutUint32(v[16:], prodMS)
	binary.LittleEndian.PutUint32(v[20:], prodLS)
	return v
}

func lookTranslation(pairs ...uint16) []byte {
	var v []byte
	for _, p := range pairs {
		v = binary.LittleEndian.AppendUint16(v, p)
	}
	return lookVerNode("VarFileInfo", true, nil, 0, lookVerNode("Translation", false, v, len(v)))
}

// lookNotepad is a version resource shaped like the one of Windows' notepad.exe, as
// the upstream agent reports it, plus an unused table and an empty string.
func lookNotepad() []byte {
	return lookVerNode("VS_VERSION_INFO", false, lookFixed(6<<16|2, 26100<<16|9278, 10<<16, 26100<<16|9278), 52,
		lookVerNode("StringFileInfo", true, nil, 0,
			lookVerNode("040704B0", true, nil, 0, lookVerString("CompanyName", "Falsch")),
			lookVerNode("040904B0", true, nil, 0,
				lookVerString("Comments", ""),
				lookVerString("CompanyName", "Microsoft Corporation"),
				lookVerString("FileDescription", "Notepad"),
				lookVerString("FileVersion", "6.2.26100.9278 (WinBuild.160101.0800)"),
				lookVerString("InternalName", "Notepad"),
				lookVerString("LegalCopyright", "© Microsoft Corporation. All rights reserved."),
				lookVerString("OriginalFilename", "NOTEPAD.EXE.MUI"),
				lookVerString("ProductName", "Microsoft® Windows® Operating System"),
				lookVerString("ProductVersion", "10.0.26100.9278"))),
		lookTranslation(0x0409, 0x04b0, 0x0407, 0x04b0))
}

func lookVerRows(t *testing.T, blob []byte) string {
	t.Helper()
	r, err := parseVersionInfo(blob)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, row := range versionRows(r) {
		b.WriteString(row[0] + "|" + row[1] + "\n")
	}
	return b.String()
}

func TestParseVersionInfo(t *testing.T) {
	want := "file_version|6.2.26100.9278\nproduct_version|10.0.26100.9278\ncompany_name|Microsoft Corporation\n" +
		"file_description|Notepad\ninternal_name|Notepad\noriginal_filename|NOTEPAD.EXE.MUI\n" +
		"product_name|Microsoft® Windows® Operating System\nlegal_copyright|© Microsoft Corporation. All rights reserved.\n"
	// GetFileVersionInfoW hands back more room than the resource needs.
	blob := append(lookNotepad(), make([]byte, 300)...)
	if got := lookVerRows(t, blob); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}

	t.Run("no translation: the only table", func(t *testing.T) {
		b := lookVerNode("VS_VERSION_INFO", false, lookFixed(1<<16|2, 3<<16|4, 5<<16|6, 7<<16|8), 52,
			lookVerNode("StringFileInfo", true, nil, 0,
				lookVerNode("040904b0", true, nil, 0, lookVerString("CompanyName", "X"))))
		if got := lookVerRows(t, b); got != "file_version|1.2.3.4\nproduct_version|5.6.7.8\ncompany_name|X\n" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("first translation without a table: the next translation's", func(t *testing.T) {
		b := lookVerNode("VS_VERSION_INFO", false, nil, 0,
			lookVerNode("StringFileInfo", true, nil, 0,
				lookVerNode("000004b0", true, nil, 0, lookVerString("CompanyName", "Neutral")),
				lookVerNode("040904b0", true, nil, 0, lookVerString("CompanyName", "X"))),
			lookTranslation(0x0407, 0x04e4, 0x0409, 0x04b0))
		if got := lookVerRows(t, b); got != "company_name|X\n" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("no listed table: US English before the first table", func(t *testing.T) {
		b := lookVerNode("VS_VERSION_INFO", false, nil, 0,
			lookVerNode("StringFileInfo", true, nil, 0,
				lookVerNode("041104b0", true, nil, 0, lookVerString("CompanyName", "Japanese")),
				lookVerNode("040904E4", true, nil, 0, lookVerString("CompanyName", "US 1252"))),
			lookTranslation(0x0407, 0x04b0))
		if got := lookVerRows(t, b); got != "company_name|US 1252\n" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("no listed or US table: the first table in the resource", func(t *testing.T) {
		b := lookVerNode("VS_VERSION_INFO", false, nil, 0,
			lookVerNode("StringFileInfo", true, nil, 0,
				lookVerNode("041104b0", true, nil, 0, lookVerString("CompanyName", "Japanese")),
				lookVerNode("040704b0", true, nil, 0, lookVerString("CompanyName", "German"))),
			lookTranslation(0x0409, 0x04b0))
		if got := lookVerRows(t, b); got != "company_name|Japanese\n" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("no string table at all", func(t *testing.T) {
		b := lookVerNode("VS_VERSION_INFO", false, lookFixed(1<<16|2, 3<<16|4, 5<<16|6, 7<<16|8), 52,
			lookTranslation(0x0409, 0x04b0))
		if got := lookVerRows(t, b); got != "file_version|1.2.3.4\nproduct_version|5.6.7.8\n" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("text length counted in bytes", func(t *testing.T) {
		v := []byte{'A', 0, 'c', 0, 'm', 0, 'e', 0, 0, 0}
		s := lookVerNode("CompanyName", true, v, len(v)) // twice the units
		b := lookVerNode("VS_VERSION_INFO", false, nil, 0,
			lookVerNode("StringFileInfo", true, nil, 0, lookVerNode("040904b0", true, nil, 0, s)),
			lookTranslation(0x0409, 0x04b0))
		if got := lookVerRows(t, b); got != "company_name|Acme\n" {
			t.Errorf("got %q", got)
		}
	})
	for _, c := range []struct {
		name string
		blob []byte
	}{
		{"empty", nil},
		{"short header", []byte{1, 0, 0}},
		{"length past the end", lookNotepad()[:100]},
		{"wrong root key", lookVerNode("VS_VERSIONINFO", false, nil, 0)},
		{"bad fixed signature", lookVerNode("VS_VERSION_INFO", false, make([]byte, 52), 52)},
		{"short fixed info", lookVerNode("VS_VERSION_INFO", false, lookFixed(0, 0, 0, 0)[:20], 20)},
		{"unterminated key", []byte{10, 0, 0, 0, 0, 0, 'V', 0, 'S', 0}},
		{"binary value past its node", func() []byte {
			b := lookVerNode("VS_VERSION_INFO", false, lookFixed(0, 0, 0, 0), 52)
			binary.LittleEndian.PutUint16(b[2:], 200)
			return b
		}()},
		{"child longer than its parent", func() []byte {
			b := lookNotepad()
			// The first child starts after the root's key and fixed info.
			off := align4(6+32) + 52
			binary.LittleEndian.PutUint16(b[off:], 0xFFF0)
			return b
		}()},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := parseVersionInfo(c.blob); !errors.Is(err, errVersionResource) {
				t.Fatalf("err %v", err)
			}
		})
	}
}

// TestVersionInfoRealLaunchers reads the version resources of two real Windows
// executables (testdata/verinfo/SOURCES.md): their only string table is British
// English (080904b0) while their translation names US English (0409, 04b0).
func TestVersionInfoRealLaunchers(t *testing.T) {
	want := func(exe string) string {
		return "file_version|1.1.0.14\nproduct_version|1.1.0.14\ncompany_name|Simple Launcher User\n" +
			"file_description|Simple Launcher Executable\ninternal_name|" + exe + "\noriginal_filename|" + exe + "\n" +
			"product_name|Simple Launcher\nlegal_copyright|Copyright (C) Simple Launcher User\n"
	}
	for name, exe := range map[string]string{"distlib_w64_launcher.bin": "w64.exe", "distlib_t32_launcher.bin": "t32.exe"} {
		b, err := os.ReadFile(filepath.Join("testdata", "verinfo", name))
		if err != nil {
			t.Fatal(err)
		}
		r, err := parseVersionInfo(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(r.Translations, []uint32{0x040904b0}) || !slices.Equal(r.TableOrder, []string{"080904b0"}) {
			t.Errorf("%s: translations %x, tables %q", name, r.Translations, r.TableOrder)
		}
		if got := lookVerRows(t, b); got != want(exe) {
			t.Errorf("%s:\n got %q\nwant %q", name, got, want(exe))
		}
	}
}

func FuzzParseVersionInfo(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "verinfo", "distlib_w64_launcher.bin")); err == nil {
		f.Add(b)
	}
	f.Add(lookNotepad())
	f.Add(lookVerNode("VS_VERSION_INFO", false, nil, 0))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseVersionInfo(b)
		if err != nil {
			return
		}
		key := stringTable(r)
		if (key == "") != (len(r.TableOrder) == 0) || (key != "" && r.Tables[key] == nil) {
			t.Fatalf("table %q of %q", key, r.TableOrder)
		}
		for _, row := range versionRows(r) {
			if row[0] == "" {
				t.Fatalf("row without a kind: %q", row)
			}
		}
	})
}
