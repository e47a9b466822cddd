package main

import "golang.org/x/sys/windows"

// publish gives the complete file tmp its final name with MoveFileEx without
// MOVEFILE_REPLACE_EXISTING, which fails when that name is taken: the name only ever
// shows the whole new file.
func (d *pinnedDir) publish(tmp, name string) error {
	from, err := windows.UTF16PtrFromString(d.path(tmp))
	if err != nil {
		return err
	}
	to, err := windows.UTF16PtrFromString(d.path(name))
	if err != nil {
		return err
	}
	return windows.MoveFileEx(from, to, windows.MOVEFILE_WRITE_THROUGH)
}
