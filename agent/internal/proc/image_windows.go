package proc

import (
	"os"

	"golang.org/x/sys/windows"
)

// materialize hashes the open binary while copying it into a private directory:
// Windows cannot execute a handle, so the copy (made from the very bytes that were
// hashed) is what runs.
func materialize(f *os.File, b binary) (*Image, []byte, error) { return copyImage(f, b) }

// privateDACL gives full control to SYSTEM, the Administrators and the directory's
// owner and to nobody else, and does not inherit from the parent (P): the temporary
// directory's parent may let other users in.
const privateDACL = "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;FA;;;OW)"

// restrictDir replaces the private copy's directory DACL with privateDACL.
func restrictDir(dir string) error {
	sd, err := windows.SecurityDescriptorFromString(privateDACL)
	if err != nil {
		return err
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return err
	}
	return windows.SetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil)
}
