//go:build !windows

package cli

import "os"

// runsAsSystem reports whether the agent is the machine's rather than a user's: it
// runs as root (as a systemd or launchd service does).
func runsAsSystem() bool { return os.Geteuid() == 0 }
