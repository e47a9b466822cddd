// Package sysinfo describes the machine the agent runs on, as the fleet server wants it
// at registration: the host name and the platform (operating system, architecture and
// operating system version, in upstream's spelling).
package sysinfo

import (
	"os"
	"runtime"

	"github.com/yuzugo/yuzu/sdk/rows"
)

// Platform is the operating system, architecture and operating system version.
type Platform struct {
	OS      string // "windows", "linux", "darwin"
	Arch    string // "x86_64", "aarch64", "armv7", else Go's name
	Version string // Windows "major.minor.build", elsewhere `uname -r`; empty if unknown
}

// Current returns the platform the agent runs on. The version is probed each time (it
// changes only across a reboot, and registration is rare).
func Current() Platform {
	return Platform{OS: runtime.GOOS, Arch: Arch(runtime.GOARCH), Version: rows.ValidUTF8(osVersion())}
}

// Arch maps a Go architecture name onto the name upstream agents report, so a fleet
// server's filters see one spelling for one CPU.
func Arch(goarch string) string {
	switch goarch {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	case "arm":
		return "armv7"
	case "386":
		return "x86"
	}
	return goarch
}

// Hostname returns the host name, or "unknown" when the system will not say. A host
// name is bytes to the kernel; it travels as a protobuf string, so invalid UTF-8
// becomes U+FFFD rather than breaking the registration.
func Hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown"
	}
	return rows.ValidUTF8(h)
}
