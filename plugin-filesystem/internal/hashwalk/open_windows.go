package hashwalk

import (
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Reparse tags and masks (documented Win32 values) that decide how a
// reparse point is treated.
const (
	reparseNameSurrogate = 0x20000000 // symlinks, junctions, mounted folders
	reparseTagWOF        = 0x80000017 // compressed by the Windows Overlay Filter
	reparseTagDedup      = 0x80000013 // data deduplication
	recallAttrs          = windows.FILE_ATTRIBUTE_OFFLINE | windows.FILE_ATTRIBUTE_RECALL_ON_OPEN |
		windows.FILE_ATTRIBUTE_RECALL_ON_DATA_ACCESS
	shareAll = windows.FILE_SHARE_READ | windows.FILE_SHARE_WRITE | windows.FILE_SHARE_DELETE
)

// fileAttributeTagInfo is FILE_ATTRIBUTE_TAG_INFO.
type fileAttributeTagInfo struct {
	FileAttributes uint32
	ReparseTag     uint32
}

func openHandle(path string, access, flags uint32) (windows.Handle, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return windows.InvalidHandle, err
	}
	return windows.CreateFile(p, access, shareAll, nil, windows.OPEN_EXISTING, flags, 0)
}

func reparseTag(h windows.Handle) (uint32, error) {
	var ti fileAttributeTagInfo
	err := windows.GetFileInformationByHandleEx(h, windows.FileAttributeTagInfo,
		(*byte)(unsafe.Pointer(&ti)), uint32(unsafe.Sizeof(ti)))
	return ti.ReparseTag, err
}

// inspect opens path itself, never what a reparse point stands for, and
// says whether it may be entered or read.
func inspect(path string, wantDir bool) outcome {
	h, err := openHandle(path, windows.FILE_READ_ATTRIBUTES,
		windows.FILE_FLAG_OPEN_REPARSE_POINT|windows.FILE_FLAG_BACKUP_SEMANTICS)
	if err != nil {
		return wasUnreadable
	}
	defer windows.CloseHandle(h)
	var bi windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &bi); err != nil {
		return wasUnreadable
	}
	if bi.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0 {
		tag, err := reparseTag(h)
		if err == nil && tag&reparseNameSurrogate != 0 {
			return wasLink
		}
		return wasUnreadable
	}
	if bi.FileAttributes&recallAttrs != 0 {
		return wasUnreadable
	}
	if wantDir != (bi.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != 0) {
		return wasNotRegular
	}
	return opened
}

func openDir(path string) (*os.File, outcome) {
	if o := inspect(path, true); o != opened {
		if o == wasNotRegular {
			return nil, wasUnreadable
		}
		return nil, o
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, wasUnreadable
	}
	return f, opened
}

func openFile(path string) (io.ReadCloser, int64, outcome) {
	h, err := openHandle(path, windows.GENERIC_READ,
		windows.FILE_FLAG_OPEN_REPARSE_POINT|windows.FILE_FLAG_SEQUENTIAL_SCAN)
	if err != nil {
		return nil, 0, wasUnreadable
	}
	var bi windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &bi); err != nil {
		windows.CloseHandle(h)
		return nil, 0, wasUnreadable
	}
	if bi.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0 {
		tag, err := reparseTag(h)
		switch {
		case err != nil:
			windows.CloseHandle(h)
			return nil, 0, wasUnreadable
		case tag&reparseNameSurrogate != 0:
			windows.CloseHandle(h)
			return nil, 0, wasLink
		case tag == reparseTagWOF || tag == reparseTagDedup:
			// The data is only readable through the filter: reopen
			// without the reparse flag and make sure it is the same file.
			h2, err := openHandle(path, windows.GENERIC_READ, windows.FILE_FLAG_SEQUENTIAL_SCAN)
			windows.CloseHandle(h)
			if err != nil {
				return nil, 0, wasUnreadable
			}
			var bi2 windows.ByHandleFileInformation
			if err := windows.GetFileInformationByHandle(h2, &bi2); err != nil ||
				bi2.VolumeSerialNumber != bi.VolumeSerialNumber ||
				bi2.FileIndexHigh != bi.FileIndexHigh || bi2.FileIndexLow != bi.FileIndexLow {
				windows.CloseHandle(h2)
				return nil, 0, wasUnreadable
			}
			h, bi = h2, bi2
		default:
			// Cloud placeholders and unknown tags are never recalled.
			windows.CloseHandle(h)
			return nil, 0, wasUnreadable
		}
	}
	if bi.FileAttributes&recallAttrs != 0 {
		windows.CloseHandle(h)
		return nil, 0, wasUnreadable
	}
	if bi.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != 0 {
		windows.CloseHandle(h)
		return nil, 0, wasNotRegular
	}
	if t, err := windows.GetFileType(h); err != nil || t != windows.FILE_TYPE_DISK {
		windows.CloseHandle(h)
		return nil, 0, wasNotRegular
	}
	size := int64(bi.FileSizeHigh)<<32 | int64(bi.FileSizeLow)
	return os.NewFile(uintptr(h), path), size, opened
}

// classifyIrregular judges an entry the listing could not type: a junction
// or mounted folder is a link, anything else (cloud placeholders, unknown
// reparse tags) is unreadable.
func classifyIrregular(path string) outcome {
	if o := inspect(path, false); o != opened && o != wasNotRegular {
		return o
	}
	return wasUnreadable
}
