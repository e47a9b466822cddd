//go:build unix

package main

import (
	"errors"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/sdk"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
)

// nonBlock keeps an open of a FIFO from waiting for a writer; a regular file ignores it.
const nonBlock = unix.O_NONBLOCK

// noFollow refuses a symbolic link as the last element of an opened path.
const noFollow = unix.O_NOFOLLOW

// pinnedDir is the directory a change writes into, held open from the moment its file
// was opened. Names inside it are resolved from this descriptor where the system
// allows it (Linux), so a directory on the path swapped for a link afterwards cannot
// redirect the write; elsewhere the path is checked to still lead to it just before
// the write.
type pinnedDir struct {
	canon string
	f     *os.File
	st    unix.Stat_t
	// viaFD is "/proc/self/fd/<n>" when names can be resolved through the descriptor
	// with a plain path, which lets the atomic writer (which takes paths) work inside
	// the pinned directory; "" otherwise.
	viaFD string
}

// pinDir opens the canonical directory dir without following links, beneath base when
// base is set.
func pinDir(base *pathcheck.Base, dir string) (*pinnedDir, error) {
	f, err := pathcheck.OpenIn(base, dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	d := &pinnedDir{canon: dir, f: f}
	if err := unix.Fstat(int(f.Fd()), &d.st); err != nil {
		f.Close()
		return nil, err
	}
	d.viaFD = fdDirPath(f, &d.st)
	return d, nil
}

func (d *pinnedDir) close() { d.f.Close() }

// key identifies the directory for the write lock: device and inode, so every
// spelling of one directory shares a lock.
func (d *pinnedDir) key() uint64 {
	h := fnv.New64a()
	h.Write([]byte(strconv.FormatUint(uint64(d.st.Dev), 16) + ":" + strconv.FormatUint(uint64(d.st.Ino), 16)))
	return h.Sum64()
}

// path returns the path under which the atomic writer reaches name in the directory.
func (d *pinnedDir) path(name string) string {
	if d.viaFD != "" {
		return d.viaFD + "/" + name
	}
	return filepath.Join(d.canon, name)
}

// holds reports whether the entry called name in the directory is, right now, the
// regular file f was opened on (not a link, not another file put there since), and
// that the directory's canonical path still leads to the pinned directory.
func (d *pinnedDir) holds(name string, f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && d.holdsInfo(name, fi)
}

// holdsInfo is holds for a file known by its stat.
func (d *pinnedDir) holdsInfo(name string, fi os.FileInfo) bool {
	if !d.hasEntry(name, fi) {
		return false
	}
	// The path must still lead to this directory, without a link on the way. Where
	// names resolve through the descriptor this keeps the answer about the path the
	// caller named; elsewhere it is what keeps the write in the pinned directory.
	g, err := pathcheck.Open(d.canon, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return false
	}
	defer g.Close()
	var gst unix.Stat_t
	return unix.Fstat(int(g.Fd()), &gst) == nil && gst.Dev == d.st.Dev && gst.Ino == d.st.Ino
}

// create makes the new file name in the directory: exclusively, never through a link,
// with 0666 minus the umask.
func (d *pinnedDir) create(name string) (*os.File, error) {
	fd, err := openatRetry(int(d.f.Fd()), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o666)
	if err != nil {
		return nil, &os.PathError{Op: "create", Path: filepath.Join(d.canon, name), Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(d.canon, name)), nil
}

// hasEntry reports whether the entry called name in the pinned directory is the
// regular file fi describes, wherever the directory is now.
func (d *pinnedDir) hasEntry(name string, fi os.FileInfo) bool {
	fst, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	var est unix.Stat_t
	if unix.Fstatat(int(d.f.Fd()), name, &est, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	return est.Mode&unix.S_IFMT == unix.S_IFREG && uint64(est.Dev) == uint64(fst.Dev) && uint64(est.Ino) == uint64(fst.Ino)
}

// removeIfSame deletes the entry name of the pinned directory when it is still the
// file fi describes, even if the directory has been moved meanwhile.
func (d *pinnedDir) removeIfSame(name string, fi os.FileInfo) {
	if d.hasEntry(name, fi) {
		_ = unix.Unlinkat(int(d.f.Fd()), name, 0)
	}
}

// sync flushes the directory so a new entry survives a power cut.
func (d *pinnedDir) sync(req *sdk.Request) {
	if err := d.f.Sync(); err != nil {
		req.Log.Warn("cannot flush directory", "dir", d.canon, "err", err)
	}
}

// entryStat describes the entry e of the open directory d without following a link,
// through d rather than by a path, which may lead elsewhere by now: its size and
// whether it is a regular file.
func entryStat(d *os.File, e fs.DirEntry) (int64, bool, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(int(d.Fd()), e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, false, &os.PathError{Op: "lstat", Path: e.Name(), Err: err}
		}
		return st.Size, st.Mode&unix.S_IFMT == unix.S_IFREG, nil
	}
}
