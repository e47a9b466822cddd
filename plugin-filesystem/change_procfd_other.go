//go:build unix && !linux

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdDirPath: macOS has no path that resolves names through an open directory
// (/dev/fd/<n> is a copy of the descriptor, not a directory), so names go through the
// directory's path, checked again just before the write.
func fdDirPath(*os.File, *unix.Stat_t) string { return "" }
