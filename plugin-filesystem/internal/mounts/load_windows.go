package mounts

import "golang.org/x/sys/windows"

// Load returns a table that judges only a path's own spelling and the type
// of its drive: Windows offers the walk no list of mounts below a root (a
// mounted folder below the root is a reparse point, which the walk skips as
// a link). It never fails.
func Load() (*Table, error) {
	return &Table{root: classifyWindowsPath}, nil
}

func classifyWindowsPath(p string) Class {
	c, drive := WindowsVolume(p)
	if c != Local || drive == "" {
		return c
	}
	u, err := windows.UTF16PtrFromString(drive)
	if err != nil {
		// A NUL in the spelling: no such drive; validation will refuse it.
		return Local
	}
	return classifyDriveType(windows.GetDriveType(u))
}
