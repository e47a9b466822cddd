package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// openData opens the store file at path for reading, if it is a regular file (not a
// symbolic link or other reparse point, not a directory, not a device) with a single
// link. Windows has no uid to compare; access is the ACL's business.
func openData(path string) (*os.File, error) {
	h, err := createFile(path, windows.GENERIC_READ, windows.OPEN_EXISTING)
	if err != nil {
		return nil, openError(path, err)
	}
	return checked(h, path)
}

// openLockFile opens the lock file at path, creating it when missing, if it passes
// the same checks as the store file.
func openLockFile(path string) (*os.File, error) {
	h, err := createFile(path, windows.GENERIC_READ|windows.GENERIC_WRITE, windows.OPEN_ALWAYS)
	if errors.Is(err, windows.ERROR_ACCESS_DENIED) || errors.Is(err, windows.ERROR_WRITE_PROTECT) {
		// A read handle is enough for LockFileEx.
		h, err = createFile(path, windows.GENERIC_READ, windows.OPEN_EXISTING)
	}
	if err != nil {
		return nil, openError(path, err)
	}
	return checked(h, path)
}

// createFile opens path without following a reparse point (symbolic link, junction):
// such an entry is opened itself, and checked refuses it. Directories cannot be opened
// without FILE_FLAG_BACKUP_SEMANTICS, so one at path fails here.
func createFile(path string, access, disposition uint32) (windows.Handle, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return windows.InvalidHandle, err
	}
	return windows.CreateFile(p, access,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, disposition, windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
}

// checked returns h as a file when it is a plain disk file with one link, and closes
// it otherwise. The checks query the open handle, so nothing can be swapped between
// check and use.
func checked(h windows.Handle, path string) (*os.File, error) {
	if err := checkHandle(h, path); err != nil {
		_ = windows.CloseHandle(h)
		return nil, err
	}
	return os.NewFile(uintptr(h), path), nil
}

func checkHandle(h windows.Handle, path string) error {
	t, err := windows.GetFileType(h)
	if err != nil {
		return &fs.PathError{Op: "GetFileType", Path: path, Err: err}
	}
	switch t {
	case windows.FILE_TYPE_DISK:
	case windows.FILE_TYPE_PIPE:
		return notRegular(path, fs.ModeNamedPipe)
	case windows.FILE_TYPE_CHAR:
		return notRegular(path, fs.ModeDevice)
	default:
		return notRegular(path, fs.ModeIrregular)
	}
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		return &fs.PathError{Op: "GetFileInformationByHandle", Path: path, Err: err}
	}
	switch {
	case info.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0:
		return fmt.Errorf("%s is a symbolic link or other reparse point", path)
	case info.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != 0:
		return notRegular(path, fs.ModeDir)
	}
	if info.NumberOfLinks > 1 {
		return tooManyLinks(path, uint64(info.NumberOfLinks))
	}
	return nil
}
