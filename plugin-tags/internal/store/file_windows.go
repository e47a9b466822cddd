package store

import (
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// vetFile refuses an open regular file with more than one link. Its stat has no link
// count on Windows, so the handle is asked. There is no uid to compare: access is the
// ACL's business.
func vetFile(f *os.File, _ fs.FileInfo) error {
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(f.Fd()), &info); err != nil {
		return &fs.PathError{Op: "GetFileInformationByHandle", Path: f.Name(), Err: err}
	}
	if info.NumberOfLinks > 1 {
		return tooManyLinks(f.Name(), uint64(info.NumberOfLinks))
	}
	return nil
}

// setMode and narrowMode do nothing on Windows, where a file's mode bits stand only
// for the read-only attribute and the directory's ACL decides who may open it.
func setMode(*os.File) error { return nil }

func narrowMode(*os.File, fs.FileInfo) error { return nil }
