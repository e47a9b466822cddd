//go:build windows

package supervisor

import "github.com/yuzugo/yuzu/agent/internal/proc"

// openImage verifies b afresh, as a start whose image is not kept does (on Windows no
// image is kept): it opens b without following a link, checks on the open descriptor
// that it is a regular file owned by root or the agent's user and writable by nobody
// else, hashes it and compares with the catalog's checksum. Every refusal is a
// *RefusedError naming the file. The tests of Windows use it.
func openImage(b Binary) (*proc.Image, error) {
	var images proc.ImageCache
	return images.Open(b.Name, b.Path, b.Checksum)
}
