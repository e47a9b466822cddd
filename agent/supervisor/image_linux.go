package supervisor

import (
	"crypto/sha256"
	"os"
	"strconv"
)

// materialize hashes the open binary and, when /proc is mounted, runs it through
// /proc/self/fd/N: the kernel then executes the very file the descriptor holds, even if
// the path has since been renamed over. Without /proc it falls back to a private copy.
func materialize(f *os.File, b Binary) (*image, []byte, error) {
	fdPath := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if _, err := os.Stat(fdPath); err != nil {
		return copyImage(f, b)
	}
	h := sha256.New()
	if err := hashCopy(h, nil, f); err != nil {
		return nil, nil, &RefusedError{Path: b.Path, Reason: "read: " + err.Error()}
	}
	return &image{execPath: fdPath, fd: f}, h.Sum(nil), nil
}

// restrictDir is a no-op: os.MkdirTemp already makes the directory 0700.
func restrictDir(string) error { return nil }
