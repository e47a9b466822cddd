//go:build !linux && !windows

package proc

import "os"

// materialize hashes the open binary while copying it into a private directory: macOS
// (and any other system here) cannot execute a descriptor, so the copy, made from the
// very bytes that were hashed, is what runs.
func materialize(f *os.File, b binary) (*Image, []byte, error) { return copyImage(f, b) }

// noWriters cannot tell here: no verification record is written or used.
func noWriters(*os.File) bool { return false }

// restrictDir is a no-op: os.MkdirTemp already makes the directory 0700.
func restrictDir(string) error { return nil }
