package main

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
)

// openForRead opens a canonical path for reading without following a link, without
// blocking on a FIFO and, when the agent may, without updating the access time:
// reads never alter the target.
func openForRead(base *pathcheck.Base, canon string) (*os.File, error) {
	flags := os.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY
	f, err := pathcheck.OpenIn(base, canon, flags|unix.O_NOATIME, 0)
	if errors.Is(err, unix.EPERM) {
		// O_NOATIME is only allowed to the file's owner (or root).
		f, err = pathcheck.OpenIn(base, canon, flags, 0)
	}
	return f, err
}
