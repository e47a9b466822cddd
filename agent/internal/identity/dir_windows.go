package identity

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The key and the identity are kept from other users by their DACLs, given when each
// file and the directory are created (not set afterwards, so no moment has the
// parent's inherited entries): SYSTEM, Administrators and the agent's own user, full
// control; nobody else anything. Wine keeps a DACL as Unix mode bits and does not
// inherit one, so a DACL set at creation is also the only one it keeps.

// privateSD is the security descriptor of what the agent creates here; self is the
// SID of the agent's user ("" when its token cannot be read).
func privateSD(dir bool) (*windows.SECURITY_DESCRIPTOR, error) {
	inherit := ""
	if dir {
		inherit = "OICI"
	}
	sddl := fmt.Sprintf("D:P(A;%[1]s;FA;;;SY)(A;%[1]s;FA;;;BA)", inherit)
	if u, err := windows.GetCurrentProcessToken().GetTokenUser(); err == nil {
		sddl += fmt.Sprintf("(A;%s;FA;;;%s)", inherit, u.User.Sid.String())
	}
	return windows.SecurityDescriptorFromString(sddl)
}

func attributes(sd *windows.SECURITY_DESCRIPTOR) *windows.SecurityAttributes {
	return &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), SecurityDescriptor: sd}
}

// ensureDir makes the identity directory with the private DACL, or gives an existing
// one that DACL.
func ensureDir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	sd, err := privateSD(true)
	if err != nil {
		return err
	}
	name, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return err
	}
	err = windows.CreateDirectory(name, attributes(sd))
	if err == nil {
		return nil
	}
	if !errors.Is(err, windows.ERROR_ALREADY_EXISTS) {
		return fmt.Errorf("%s: %w", dir, err)
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return err
	}
	if err := windows.SetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil); err != nil {
		return fmt.Errorf("%s: restricting it to SYSTEM, Administrators and the agent's user: %w", dir, err)
	}
	return nil
}

// writePrivate writes path whole or not at all: a new file beside it, created with the
// private DACL, written and flushed, then moved over path.
func writePrivate(path string, b []byte) error {
	sd, err := privateSD(false)
	if err != nil {
		return err
	}
	var suffix [8]byte
	_, _ = rand.Read(suffix[:])
	tmp := path + ".tmp." + hex.EncodeToString(suffix[:])
	tname, err := windows.UTF16PtrFromString(tmp)
	if err != nil {
		return err
	}
	h, err := windows.CreateFile(tname, windows.GENERIC_WRITE, 0, attributes(sd), windows.CREATE_NEW, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		return &os.PathError{Op: "create", Path: tmp, Err: err}
	}
	f := os.NewFile(uintptr(h), tmp)
	_, werr := f.Write(b)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return werr
	}
	pname, err := windows.UTF16PtrFromString(path)
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := windows.MoveFileEx(tname, pname, windows.MOVEFILE_REPLACE_EXISTING|windows.MOVEFILE_WRITE_THROUGH); err != nil {
		_ = os.Remove(tmp)
		return &os.PathError{Op: "rename", Path: tmp, Err: err}
	}
	return nil
}
