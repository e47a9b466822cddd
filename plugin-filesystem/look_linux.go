package main

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
)

// openForRead opens a canonical path for reading without following a link, without
// blocking on a FIFO and, when the agent may, without updating the access time:
// reads never alter the target.
func openForRead(base, canon string) (*os.File, error) {
	flags := os.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY
	f, err := pathcheck.OpenIn(base, canon, flags|unix.O_NOATIME, 0)
	if errors.Is(err, unix.EPERM) {
		// O_NOATIME is only allowed to the file's owner (or root).
		f, err = pathcheck.OpenIn(base, canon, flags, 0)
	}
	return f, err
}

// statIn describes the canonical path through an O_PATH descriptor opened without
// following any link, inside base: nothing is really opened (a FIFO or a device
// included), and a link swapped in since the validation is refused.
func statIn(base, canon string) (fs.FileInfo, error) {
	f, err := pathcheck.OpenIn(base, canon, unix.O_PATH, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}
