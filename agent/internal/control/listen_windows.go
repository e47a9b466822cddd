package control

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// protectedDir is the directory's security descriptor: protected from inheriting the
// parent's entries, full control to SYSTEM and Administrators, nothing to anyone
// else; children (the socket) inherit it.
const protectedDir = "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"

// Listen makes Dir(dataDir) with an ACL for SYSTEM and Administrators only and listens
// on an AF_UNIX socket in it (Windows 10 1803 and later have them; Go's net package
// speaks them). The ACL, not a file mode, keeps other users out, as a named pipe's
// would.
func Listen(dataDir string) (net.Listener, error) {
	dir := Dir(dataDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	sd, err := windows.SecurityDescriptorFromString(protectedDir)
	if err != nil {
		return nil, err
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return nil, err
	}
	if err := windows.SetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil); err != nil {
		return nil, fmt.Errorf("%s: restricting it to SYSTEM and Administrators: %w", dir, err)
	}
	path := Path(dataDir)
	// Windows shows an AF_UNIX socket as a reparse point, not a socket; the
	// directory's ACL already keeps anyone but SYSTEM and Administrators out.
	if err := clearStale(path, func(fs.FileInfo) bool { return true }); err != nil {
		return nil, err
	}
	l, err := net.Listen("unix", path)
	if errors.Is(err, wsaeafnosupport) {
		return nil, fmt.Errorf("%w (%v)", ErrNoUnixSockets, err)
	}
	return l, err
}

// wsaeafnosupport is WSAEAFNOSUPPORT, what Windows before 10 1803 and Wine answer a
// request for an AF_UNIX socket with.
const wsaeafnosupport = syscall.Errno(10047)
