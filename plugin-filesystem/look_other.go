//go:build !linux

package main

import (
	"os"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
)

// openForRead opens a canonical path for reading without following a link and
// without blocking on a FIFO.
func openForRead(base *pathcheck.Base, canon string) (*os.File, error) {
	return pathcheck.OpenIn(base, canon, os.O_RDONLY|nonBlock, 0)
}
