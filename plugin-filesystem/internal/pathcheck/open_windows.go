package pathcheck

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/windows"
)

// reparseTagNameSurrogate marks reparse tags that stand for another name: symbolic
// links, junctions and mount points (IsReparseTagNameSurrogate).
const reparseTagNameSurrogate = 0x20000000

type fileAttributeTagInfo struct {
	FileAttributes uint32
	ReparseTag     uint32
}

// openAt opens the last element without following a reparse point and refuses a
// link there; a link in an earlier element is caught afterwards, because the path the
// system reports for the handle then differs from the one asked for. Windows opens
// nothing relative to a handle, so with a base the check is that reported path: it
// must lie inside the base's.
func openAt(b *Base, path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|windows.O_FILE_FLAG_OPEN_REPARSE_POINT, perm)
	if err != nil {
		return nil, err
	}
	var info fileAttributeTagInfo
	if err := windows.GetFileInformationByHandleEx(windows.Handle(f.Fd()), windows.FileAttributeTagInfo,
		(*byte)(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if info.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0 && info.ReparseTag&reparseTagNameSurrogate != 0 {
		f.Close()
		return nil, fmt.Errorf("open %s: %w", path, ErrSymlink)
	}
	real, err := realPath(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	if !strings.EqualFold(real, path) {
		f.Close()
		return nil, fmt.Errorf("open %s: now resolves to %s: %w", path, real, ErrChanged)
	}
	if b != nil && !Contains(b.path, real) {
		f.Close()
		return nil, fmt.Errorf("open %s: %w", path, ErrOutside)
	}
	return f, nil
}

// statAt describes path without following a reparse point in its last element, and
// only if the path still resolves to itself (a link swapped in on the way is
// refused) and, with b, lies inside b.
func statAt(b *Base, path string) (fs.FileInfo, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) != 0 {
		return nil, fmt.Errorf("%s: %w", path, ErrSymlink)
	}
	again, err := canonical(path)
	if err != nil {
		return nil, err
	}
	if !strings.EqualFold(again, path) {
		return nil, fmt.Errorf("%s: now resolves to %s: %w", path, again, ErrChanged)
	}
	if b != nil && !Contains(b.path, again) {
		return nil, ErrOutside
	}
	return fi, nil
}

// openDir resolves raw and holds the directory open. Windows governs who may change
// a directory by its ACL, which the installer sets on the agent's directories; no
// ownership is judged here (strict makes no difference). The handle is opened
// without delete sharing, so while it is held nobody can rename the directory away
// or put a junction in its place.
func openDir(raw string, strict bool) (*Base, error) {
	canon, err := canonical(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotExist, err)
	}
	f, err := os.Open(canon)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotExist, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %w", ErrNotExist, err)
	}
	if !fi.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s: %w", canon, ErrNotDir)
	}
	return &Base{path: canon, dir: f}, nil
}

// realPath returns GetFinalPathNameByHandle's answer in the usual drive-letter or
// UNC spelling, without the \\?\ prefix.
func realPath(f *os.File) (string, error) {
	h := windows.Handle(f.Fd())
	buf := make([]uint16, windows.MAX_LONG_PATH)
	n, err := windows.GetFinalPathNameByHandle(h, &buf[0], uint32(len(buf)), 0)
	if err != nil {
		return "", fmt.Errorf("real path of %s: %w", f.Name(), err)
	}
	if int(n) >= len(buf) {
		return "", fmt.Errorf("real path of %s: longer than %d characters", f.Name(), len(buf))
	}
	p := windows.UTF16ToString(buf[:n])
	switch {
	case strings.HasPrefix(p, `\\?\UNC\`):
		p = `\\` + p[len(`\\?\UNC\`):]
	case strings.HasPrefix(p, `\\?\`):
		p = p[len(`\\?\`):]
	}
	return p, nil
}
