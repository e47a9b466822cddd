package main

import (
	"bytes"
	"debug/pe"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// TestShimLayout reads the DLL back with debug/pe and walks its export table the way
// the loader does: one forwarder, ProcessPrng -> advapi32.SystemFunction036.
func TestShimLayout(t *testing.T) {
	dll, err := BuildDLL(shimName, shimExports)
	if err != nil {
		t.Fatal(err)
	}
	if len(dll) != 1024 {
		t.Errorf("size %d, want 1024", len(dll))
	}
	f, err := pe.NewFile(bytes.NewReader(dll))
	if err != nil {
		t.Fatal(err)
	}
	if f.Machine != pe.IMAGE_FILE_MACHINE_AMD64 || f.Characteristics&pe.IMAGE_FILE_DLL == 0 {
		t.Errorf("machine %#x characteristics %#x: want an AMD64 DLL", f.Machine, f.Characteristics)
	}
	oh, ok := f.OptionalHeader.(*pe.OptionalHeader64)
	if !ok {
		t.Fatalf("optional header %T, want PE32+", f.OptionalHeader)
	}
	if oh.AddressOfEntryPoint != 0 || oh.SizeOfCode != 0 {
		t.Errorf("entry point %#x, code size %d: the shim must hold no code", oh.AddressOfEntryPoint, oh.SizeOfCode)
	}
	if len(f.Sections) != 1 || f.Sections[0].Name != ".rdata" || f.Sections[0].Characteristics&pe.IMAGE_SCN_MEM_EXECUTE != 0 {
		t.Fatalf("sections %v: want one non-executable .rdata", f.Sections)
	}
	dir := oh.DataDirectory[pe.IMAGE_DIRECTORY_ENTRY_EXPORT]
	sec := f.Sections[0]
	data, err := sec.Data()
	if err != nil {
		t.Fatal(err)
	}
	// at reads from an RVA inside the section.
	at := func(rva uint32) []byte {
		off := int(rva) - int(sec.VirtualAddress)
		if off < 0 || off >= len(data) {
			t.Fatalf("RVA %#x outside .rdata", rva)
		}
		return data[off:]
	}
	cstr := func(rva uint32) string {
		b := at(rva)
		return string(b[:bytes.IndexByte(b, 0)])
	}
	le := binary.LittleEndian
	ed := at(dir.VirtualAddress)
	if got := cstr(le.Uint32(ed[12:])); got != "bcryptprimitives.dll" {
		t.Errorf("DLL name %q", got)
	}
	nFuncs, nNames := le.Uint32(ed[20:]), le.Uint32(ed[24:])
	if nFuncs != 1 || nNames != 1 {
		t.Fatalf("%d functions, %d names; want 1 and 1", nFuncs, nNames)
	}
	funcs, names, ords := le.Uint32(ed[28:]), le.Uint32(ed[32:]), le.Uint32(ed[36:])
	if got := cstr(le.Uint32(at(names))); got != "ProcessPrng" {
		t.Errorf("export name %q", got)
	}
	ord := le.Uint16(at(ords))
	fn := le.Uint32(at(funcs + 4*uint32(ord)))
	if fn < dir.VirtualAddress || fn >= dir.VirtualAddress+dir.Size {
		t.Fatalf("ProcessPrng at RVA %#x, outside the export directory: not a forwarder", fn)
	}
	if got := cstr(fn); got != "advapi32.SystemFunction036" {
		t.Errorf("forwarded to %q", got)
	}
}

func TestDeterministic(t *testing.T) {
	a, _ := BuildDLL(shimName, shimExports)
	b, _ := BuildDLL(shimName, shimExports)
	if !bytes.Equal(a, b) {
		t.Error("two builds differ")
	}
}

func TestRefusals(t *testing.T) {
	if _, err := BuildDLL("x.dll", nil); err == nil {
		t.Error("no exports: accepted")
	}
	if _, err := BuildDLL("x.dll", []Forwarder{{"b", "k.b"}, {"a", "k.a"}}); err == nil {
		t.Error("unsorted names: accepted")
	}
	long := make([]Forwarder, 40)
	for i := range long {
		long[i] = Forwarder{Name: string(rune('a'+i/26)) + string(rune('a'+i%26)), Target: "kernel32.SomeRatherLongFunctionName"}
	}
	if _, err := BuildDLL("x.dll", long); err == nil {
		t.Error("export data over one file block: accepted")
	}
}

func TestWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bcryptprimitives.dll")
	if err := write(path); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := BuildDLL(shimName, shimExports)
	if !bytes.Equal(got, want) {
		t.Error("written file differs from BuildDLL")
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".mkprng-*")); len(left) > 0 {
		t.Errorf("temp files left: %v", left)
	}
}
