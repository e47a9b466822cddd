//go:build unix

package main

import (
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
)

// maxTempPathBytes is the longest temporary path upstream can produce on POSIX (it
// builds the name in a 512-byte buffer); a longer one fails as it does there.
const maxTempPathBytes = 511

// tempName is upstream's POSIX template: prefix, six random alphanumeric characters,
// suffix.
func tempName(prefix, suffix string) (string, error) {
	r, err := randomAlnum(6)
	if err != nil {
		return "", err
	}
	return prefix + r + suffix, nil
}

func tempPathFits(p string) bool { return len(p) <= maxTempPathBytes }

// createTempEntry creates name in the held directory d, through its descriptor, so
// whatever happens to the directory's name meanwhile the entry lands in the directory
// that was resolved. The entry is created exclusively (an existing entry, link
// included, is never reused) and then given exactly 0600 or 0700 through its own
// descriptor, whatever the umask. It returns the path of the new entry.
func createTempEntry(d *pathcheck.Base, name string, isDir bool) (string, error) {
	dfd := int(d.File().Fd())
	var fd int
	var err error
	if isDir {
		if err := unix.Mkdirat(dfd, name, 0o700); err != nil {
			if errors.Is(err, unix.EEXIST) {
				return "", errTempExists
			}
			return "", err
		}
		fd, err = openatRetry(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	} else {
		fd, err = openatRetry(dfd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) {
			return "", errTempExists
		}
	}
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	mode := uint32(0o600)
	if isDir {
		mode = 0o700
	}
	if err := fchmodRetry(fd, mode); err != nil {
		return "", err
	}
	return filepath.Join(d.Path(), name), nil
}

// removeTempEntry deletes name, made by createTempEntry, from the held directory d,
// through its descriptor. A directory that someone with the rights to do so filled
// meanwhile is removed with its content (os.RemoveAll never follows links).
func removeTempEntry(d *pathcheck.Base, name string, isDir bool) error {
	flags := 0
	if isDir {
		flags = unix.AT_REMOVEDIR
	}
	err := unix.Unlinkat(int(d.File().Fd()), name, flags)
	if isDir && (errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST)) {
		return os.RemoveAll(filepath.Join(d.Path(), name))
	}
	return err
}

func openatRetry(dirfd int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, mode)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

func fchmodRetry(fd int, mode uint32) error {
	for {
		err := unix.Fchmod(fd, mode)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// alnum is the alphabet of the POSIX random part, as mkstemp uses.
const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// randomAlnum returns n characters drawn uniformly from alnum with crypto/rand. Bytes
// of 248 and above are thrown away so every character is equally likely (248 is the
// largest multiple of 62 that fits in a byte).
func randomAlnum(n int) (string, error) {
	out := make([]byte, 0, n)
	var buf [16]byte
	for len(out) < n {
		if _, err := rand.Read(buf[:]); err != nil {
			return "", err
		}
		for _, b := range buf {
			if b < 248 && len(out) < n {
				out = append(out, alnum[int(b)%len(alnum)])
			}
		}
	}
	return string(out), nil
}
