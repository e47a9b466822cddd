//go:build !darwin

package atomicfile

import "os"

func syncFile(f *os.File) error { return f.Sync() }
