//go:build unix

package sysinfo

import "golang.org/x/sys/unix"

// osVersion is the kernel release, as `uname -r` prints it.
func osVersion() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}
