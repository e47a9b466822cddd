//go:build linux

package proc

// openImage verifies b afresh, as a start whose image is not kept does: it opens b
// without following a link, checks on the open descriptor that it is a regular file
// owned by root or the agent's user and writable by nobody else, hashes it and
// compares with the catalog's checksum. Every refusal is a *RefusedError naming the
// file. The tests of Linux use it.
func openImage(b binary) (*Image, error) {
	f, err := trustedBinary(b)
	if err != nil {
		return nil, err
	}
	return verifyImage(f, b)
}
