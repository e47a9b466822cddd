package mounts

import (
	"fmt"

	"github.com/yuzugo/yuzu/sdk/safefile"
)

// maxMountinfo caps how much of /proc/self/mountinfo is read. A host with
// thousands of container mounts stays far below it; a larger table is not
// parsed in part, because a partial list could miss a network mount.
const maxMountinfo = 16 << 20

const mountinfoPath = "/proc/self/mountinfo"

// Load reads the mount list of the current process. Any failure, including a
// list over 16 MiB, wraps ErrUnavailable.
func Load() (*Table, error) {
	data, err := safefile.ReadFile(mountinfoPath, maxMountinfo)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	ms, err := ParseMountinfo(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("%w: %s lists no mounts", ErrUnavailable, mountinfoPath)
	}
	return NewTable(ms), nil
}
