//go:build !linux

package main

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
)

// openForRead opens a canonical path for reading without following a link and
// without blocking on a FIFO.
func openForRead(base, canon string) (*os.File, error) {
	return pathcheck.OpenIn(base, canon, os.O_RDONLY|nonBlock, 0)
}

// statIn describes the canonical path and then checks that it still validates to
// itself inside base, so a link swapped in meanwhile is refused. There is no
// descriptor-only open here (Linux has O_PATH), and opening would have effects on a
// device.
func statIn(base, canon string) (fs.FileInfo, error) {
	fi, err := os.Lstat(canon)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s: %w", canon, pathcheck.ErrSymlink)
	}
	again, err := pathcheck.Validate(canon, base)
	if err != nil {
		return nil, err
	}
	if again != canon {
		return nil, fmt.Errorf("%s: %w", canon, pathcheck.ErrChanged)
	}
	return fi, nil
}
