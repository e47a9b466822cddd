package sysinfo

import (
	"fmt"

	"golang.org/x/sys/windows"
)

// osVersion is "major.minor.build" from RtlGetVersion, which, unlike GetVersionEx,
// reports the real version whatever the executable's compatibility manifest says.
func osVersion() string {
	v := windows.RtlGetVersion()
	if v == nil {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d", v.MajorVersion, v.MinorVersion, v.BuildNumber)
}
