// Command mkprng writes bcryptprimitives.dll for a Wine prefix that lacks one.
//
// Go 1.22 and later load ProcessPrng from bcryptprimitives.dll at startup and stop
// ("fatal error: bcryptprimitives.dll not found") when the system has no such DLL;
// Wine 8.0 has none. The DLL written here has no code at all: one read-only section
// holding an export table whose only entry, ProcessPrng, is a forwarder to
// advapi32.SystemFunction036 (RtlGenRandom), which Wine does implement. The loader
// resolves a forwarder by name, so nothing in this file ever runs. The two functions
// differ only in the width of the length argument and of the result, and Go reads
// both as success when the call fills the buffer (docs/windows.md).
//
// The output is the same bytes on every run, so a prefix can be checked for it.
//
// Usage:
//
//	mkprng -o PATH
package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// Forwarder is one exported name whose address is another DLL's export, written
// "dll.Function" as the loader expects.
type Forwarder struct {
	Name, Target string
}

// The shim this command writes.
var (
	shimName    = "bcryptprimitives.dll"
	shimExports = []Forwarder{{Name: "ProcessPrng", Target: "advapi32.SystemFunction036"}}
)

// Layout constants of the image. Everything fits in one 512-byte file block after
// the headers, mapped at one page.
const (
	fileAlign    = 0x200
	sectionAlign = 0x1000
	headersSize  = 0x200  // DOS header, PE signature, COFF and optional headers, one section header
	sectionRVA   = 0x1000 // where .rdata is mapped
	peOffset     = 0x40   // e_lfanew: the PE signature right after the DOS header
	optHdrSize   = 240    // PE32+ optional header with 16 data directories
	exportDirLen = 40     // IMAGE_EXPORT_DIRECTORY
)

// BuildDLL returns a PE32+ (x86-64) DLL named dllName whose exports are all
// forwarders. Names must be given in ascending byte order (the loader binary-searches
// the name table).
func BuildDLL(dllName string, exports []Forwarder) ([]byte, error) {
	if len(exports) == 0 {
		return nil, fmt.Errorf("no exports")
	}
	for i := 1; i < len(exports); i++ {
		if exports[i-1].Name >= exports[i].Name {
			return nil, fmt.Errorf("export names not in ascending order: %q, %q", exports[i-1].Name, exports[i].Name)
		}
	}
	n := uint32(len(exports))

	// .rdata: the export directory, then the address, name and ordinal tables, then
	// the strings they point at.
	var sec bytes.Buffer
	eatRVA := uint32(sectionRVA + exportDirLen)
	namesRVA := eatRVA + 4*n
	ordsRVA := namesRVA + 4*n
	strRVA := ordsRVA + 2*n
	var strs bytes.Buffer
	addStr := func(s string) uint32 {
		rva := strRVA + uint32(strs.Len())
		strs.WriteString(s)
		strs.WriteByte(0)
		return rva
	}
	dllNameRVA := addStr(dllName)
	nameRVAs := make([]uint32, n)
	targetRVAs := make([]uint32, n)
	for i, e := range exports {
		nameRVAs[i] = addStr(e.Name)
		targetRVAs[i] = addStr(e.Target)
	}
	le := binary.LittleEndian
	w := func(v any) { _ = binary.Write(&sec, le, v) }
	w(uint32(0))  // Characteristics
	w(uint32(0))  // TimeDateStamp: 0 keeps the output reproducible
	w(uint16(0))  // MajorVersion
	w(uint16(0))  // MinorVersion
	w(dllNameRVA) // Name
	w(uint32(1))  // Base: ordinals start at 1
	w(n)          // NumberOfFunctions
	w(n)          // NumberOfNames
	w(eatRVA)     // AddressOfFunctions
	w(namesRVA)   // AddressOfNames
	w(ordsRVA)    // AddressOfNameOrdinals
	for _, r := range targetRVAs {
		// An address inside the export directory's range is a forwarder string.
		w(r)
	}
	for _, r := range nameRVAs {
		w(r)
	}
	for i := range exports {
		w(uint16(i))
	}
	sec.Write(strs.Bytes())
	exportSize := uint32(sec.Len()) // the whole section is the export directory
	if exportSize > fileAlign {
		return nil, fmt.Errorf("export data is %d bytes, over the %d this layout holds", exportSize, fileAlign)
	}
	rawSize := uint32(fileAlign)

	var img bytes.Buffer
	hw := func(v any) { _ = binary.Write(&img, le, v) }
	// DOS header: only the signature and e_lfanew matter to the loader.
	dos := make([]byte, peOffset)
	copy(dos, "MZ")
	le.PutUint32(dos[0x3c:], peOffset)
	img.Write(dos)
	img.WriteString("PE\x00\x00")
	// COFF file header.
	hw(uint16(0x8664))     // Machine: AMD64
	hw(uint16(1))          // NumberOfSections
	hw(uint32(0))          // TimeDateStamp
	hw(uint32(0))          // PointerToSymbolTable
	hw(uint32(0))          // NumberOfSymbols
	hw(uint16(optHdrSize)) // SizeOfOptionalHeader
	// EXECUTABLE_IMAGE | LARGE_ADDRESS_AWARE | DLL
	hw(uint16(0x0002 | 0x0020 | 0x2000))
	// Optional header (PE32+).
	hw(uint16(0x20b))                    // Magic
	hw(uint8(0))                         // MajorLinkerVersion
	hw(uint8(0))                         // MinorLinkerVersion
	hw(uint32(0))                        // SizeOfCode: there is none
	hw(rawSize)                          // SizeOfInitializedData
	hw(uint32(0))                        // SizeOfUninitializedData
	hw(uint32(0))                        // AddressOfEntryPoint: no DllMain
	hw(uint32(sectionRVA))               // BaseOfCode
	hw(uint64(0x180000000))              // ImageBase (the usual one for 64-bit DLLs)
	hw(uint32(sectionAlign))             // SectionAlignment
	hw(uint32(fileAlign))                // FileAlignment
	hw(uint16(6))                        // MajorOperatingSystemVersion
	hw(uint16(0))                        // MinorOperatingSystemVersion
	hw(uint16(0))                        // MajorImageVersion
	hw(uint16(0))                        // MinorImageVersion
	hw(uint16(6))                        // MajorSubsystemVersion
	hw(uint16(0))                        // MinorSubsystemVersion
	hw(uint32(0))                        // Win32VersionValue
	hw(uint32(2 * sectionAlign))         // SizeOfImage: headers page plus .rdata page
	hw(uint32(headersSize))              // SizeOfHeaders
	hw(uint32(0))                        // CheckSum: only checked for drivers
	hw(uint16(3))                        // Subsystem: console
	hw(uint16(0x0020 | 0x0040 | 0x0100)) // HIGH_ENTROPY_VA | DYNAMIC_BASE | NX_COMPAT; no code, so no relocations needed
	hw(uint64(0x100000))                 // SizeOfStackReserve
	hw(uint64(0x1000))                   // SizeOfStackCommit
	hw(uint64(0x100000))                 // SizeOfHeapReserve
	hw(uint64(0x1000))                   // SizeOfHeapCommit
	hw(uint32(0))                        // LoaderFlags
	hw(uint32(16))                       // NumberOfRvaAndSizes
	// Data directories: only the export table (index 0).
	hw(uint32(sectionRVA))
	hw(exportSize)
	for i := 1; i < 16; i++ {
		hw(uint64(0))
	}
	// Section header.
	var name [8]byte
	copy(name[:], ".rdata")
	img.Write(name[:])
	hw(exportSize)          // VirtualSize
	hw(uint32(sectionRVA))  // VirtualAddress
	hw(rawSize)             // SizeOfRawData
	hw(uint32(headersSize)) // PointerToRawData
	hw(uint32(0))           // PointerToRelocations
	hw(uint32(0))           // PointerToLinenumbers
	hw(uint16(0))           // NumberOfRelocations
	hw(uint16(0))           // NumberOfLinenumbers
	// INITIALIZED_DATA | MEM_READ
	hw(uint32(0x00000040 | 0x40000000))
	if img.Len() > headersSize {
		return nil, fmt.Errorf("headers are %d bytes, over %d", img.Len(), headersSize)
	}
	img.Write(make([]byte, headersSize-img.Len()))
	img.Write(sec.Bytes())
	img.Write(make([]byte, int(rawSize)-sec.Len()))
	return img.Bytes(), nil
}

func main() {
	out := flag.String("o", "", "write the DLL to this path")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: mkprng -o PATH")
		os.Exit(2)
	}
	if err := write(*out); err != nil {
		fmt.Fprintln(os.Stderr, "mkprng:", err)
		os.Exit(1)
	}
}

// write builds the shim and puts it at path through a temporary file and a rename,
// so a prefix never holds half a DLL.
func write(path string) error {
	dll, err := BuildDLL(shimName, shimExports)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".mkprng-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(dll); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
