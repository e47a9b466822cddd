package trust

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"errors"
)

// Target says which system and architecture an executable was built for, in Go's
// names ("linux", "amd64"). A Go binary records both in its build information (what
// the SDK's plugins are); other executables are read from their headers. An error
// means the bytes are no executable this agent knows.
func Target(exe []byte) (goos, goarch string, err error) {
	r := bytes.NewReader(exe)
	if bi, err := buildinfo.Read(r); err == nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "GOOS":
				goos = s.Value
			case "GOARCH":
				goarch = s.Value
			}
		}
		if goos != "" && goarch != "" {
			return goos, goarch, nil
		}
	}
	if f, err := elf.NewFile(r); err == nil {
		defer f.Close()
		return "linux", elfArch(f.Machine), nil
	}
	if f, err := pe.NewFile(r); err == nil {
		defer f.Close()
		return "windows", peArch(f.Machine), nil
	}
	if f, err := macho.NewFile(r); err == nil {
		defer f.Close()
		return "darwin", machoArch(f.Cpu), nil
	}
	if f, err := macho.NewFatFile(r); err == nil {
		defer f.Close()
		return "darwin", "universal", nil
	}
	return "", "", errors.New("not an executable this agent knows (ELF, PE or Mach-O)")
}

func elfArch(m elf.Machine) string {
	switch m {
	case elf.EM_X86_64:
		return "amd64"
	case elf.EM_AARCH64:
		return "arm64"
	case elf.EM_386:
		return "386"
	case elf.EM_ARM:
		return "arm"
	}
	return m.String()
}

func peArch(m uint16) string {
	switch m {
	case pe.IMAGE_FILE_MACHINE_AMD64:
		return "amd64"
	case pe.IMAGE_FILE_MACHINE_ARM64:
		return "arm64"
	case pe.IMAGE_FILE_MACHINE_I386:
		return "386"
	}
	return "unknown"
}

func machoArch(c macho.Cpu) string {
	switch c {
	case macho.CpuAmd64:
		return "amd64"
	case macho.CpuArm64:
		return "arm64"
	}
	return c.String()
}

// RunsHere reports whether a binary built for goos/goarch runs on this system
// (runtimeOS/runtimeArch); an unknown target ("") is given the benefit of the doubt,
// the start will tell.
func RunsHere(goos, goarch, runtimeOS, runtimeArch string) bool {
	if goos != "" && goos != runtimeOS {
		return false
	}
	return goarch == "" || goarch == runtimeArch || (goos == "darwin" && goarch == "universal")
}
