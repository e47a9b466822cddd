package cli

import (
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"
)

// writePrivateFile writes a file only SYSTEM, Administrators and this user may read:
// its DACL is given at creation (Wine keeps no DACL set afterwards).
func writePrivateFile(t *testing.T, path string, b []byte) {
	t.Helper()
	sddl := "D:P(A;;FA;;;SY)(A;;FA;;;BA)"
	if u, err := windows.GetCurrentProcessToken().GetTokenUser(); err == nil {
		sddl += "(A;;FA;;;" + u.User.Sid.String() + ")"
	}
	sd, err := windows.SecurityDescriptorFromString(sddl)
	if err != nil {
		t.Fatal(err)
	}
	sa := &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), SecurityDescriptor: sd}
	name, _ := windows.UTF16PtrFromString(path)
	h, err := windows.CreateFile(name, windows.GENERIC_WRITE, 0, sa, windows.CREATE_ALWAYS, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(h), path)
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	f.Close()
}
