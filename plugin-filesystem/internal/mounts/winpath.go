package mounts

// Win32 GetDriveType results (documented values, kept here so the mapping can
// be tested on any OS).
const (
	driveUnknown   = 0
	driveNoRootDir = 1
	driveRemovable = 2
	driveFixed     = 3
	driveRemote    = 4
	driveCDROM     = 5
	driveRAMDisk   = 6
)

// WindowsVolume splits a Windows path spelling for the root check. A path
// that starts with two separators (\\server\share, //server/share, the
// \\?\ and \\.\ prefixes) is a UNC or device path and reads as Network
// without any system call: \\?\C:\ is refused too, because a caller can
// reach any share through that prefix. A path that starts with a drive
// letter returns its root ("C:\") for a drive-type check. Anything else
// (relative or rooted without a drive) returns Local and no drive; the
// caller makes paths absolute first.
func WindowsVolume(p string) (c Class, driveRoot string) {
	if len(p) >= 2 && isWinSep(p[0]) && isWinSep(p[1]) {
		return Network, ""
	}
	if len(p) >= 2 && p[1] == ':' && isASCIILetter(p[0]) {
		return Local, p[:2] + `\`
	}
	return Local, ""
}

// classifyDriveType maps a GetDriveType result onto a class. Only a fixed
// disk is walked: removable, optical, RAM and unknown drives are refused like
// network drives. A drive letter that does not exist reads as Local so that
// path validation reports it as not accessible instead of as a mount.
func classifyDriveType(t uint32) Class {
	switch t {
	case driveFixed, driveNoRootDir:
		return Local
	case driveRemote, driveRemovable, driveCDROM, driveRAMDisk, driveUnknown:
		return Network
	}
	return Network
}

func isWinSep(c byte) bool { return c == '\\' || c == '/' }

func isASCIILetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
