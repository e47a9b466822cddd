package update

import (
	"fmt"

	"golang.org/x/sys/windows"
)

// checkSpace refuses to start a download that the volume of dir cannot hold.
func checkSpace(dir string, need int64) error {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return err
	}
	var free, total, totalFree uint64
	if err := windows.GetDiskFreeSpaceEx(p, &free, &total, &totalFree); err != nil {
		return fmt.Errorf("free space of %s: %w", dir, err)
	}
	if int64(free) < need {
		return fmt.Errorf("%s has %d bytes free, an update needs %d: not started", dir, free, need)
	}
	return nil
}
