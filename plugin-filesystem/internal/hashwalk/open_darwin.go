package hashwalk

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// O_NOFOLLOW_ANY refuses a symlink in any component of the path, which turns
// the second resolution of every path into a safe one.
const (
	darwinDirFlags  = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_NOFOLLOW_ANY | unix.O_CLOEXEC | unix.O_NONBLOCK
	darwinFileFlags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NOFOLLOW_ANY | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY
)

func openNoFollow(path string, flags int) (int, error) {
	for {
		fd, err := unix.Open(path, flags, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return fd, err
	}
}

func classifyOpenErr(err error) outcome {
	switch {
	case errors.Is(err, unix.ELOOP):
		return wasLink
	case errors.Is(err, unix.ENXIO), errors.Is(err, unix.ENODEV), errors.Is(err, unix.EOPNOTSUPP):
		return wasNotRegular
	}
	return wasUnreadable
}

func openDir(path string) (*os.File, outcome) {
	fd, err := openNoFollow(path, darwinDirFlags)
	if err != nil {
		return nil, classifyOpenErr(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Flags&unix.SF_DATALESS != 0 {
		// Listing a dataless directory would ask its file provider to
		// fetch it.
		unix.Close(fd)
		return nil, wasUnreadable
	}
	return os.NewFile(uintptr(fd), path), opened
}

func openFile(path string) (io.ReadCloser, int64, outcome) {
	fd, err := openNoFollow(path, darwinFileFlags)
	if err != nil {
		return nil, 0, classifyOpenErr(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, 0, wasUnreadable
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, 0, wasNotRegular
	}
	if st.Flags&unix.SF_DATALESS != 0 {
		// Reading would materialise the file from iCloud or a file
		// provider; the search counts it unreadable instead.
		unix.Close(fd)
		return nil, 0, wasUnreadable
	}
	return fdFile(fd), st.Size, opened
}

// classifyIrregular is never reached on macOS, whose listings report no
// irregular entries; anything odd is unreadable.
func classifyIrregular(string) outcome { return wasUnreadable }
