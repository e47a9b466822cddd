package main

import (
	"errors"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/yuzugo/yuzu/sdk"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
)

// nonBlock and noFollow have no open-flag equivalent on Windows: there are no FIFOs
// among regular paths, and links are refused by pathcheck's open.
const (
	nonBlock = 0
	noFollow = 0
)

// pinnedDir is the directory a change writes into. Windows offers no path that
// resolves names through an open handle, so the directory is named by its canonical
// path, and before the write the target is opened again through pathcheck (which
// refuses a link as the last element and checks the final path of the handle).
type pinnedDir struct {
	canon string
}

func pinDir(base *pathcheck.Base, dir string) (*pinnedDir, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, errors.New("not a directory")
	}
	if base != nil && !pathcheck.Contains(base.Path(), dir) {
		return nil, pathcheck.ErrOutside
	}
	return &pinnedDir{canon: dir}, nil
}

func (d *pinnedDir) close() {}

// key identifies the directory for the write lock by its canonical path, in one case.
func (d *pinnedDir) key() uint64 {
	h := fnv.New64a()
	h.Write([]byte(strings.ToLower(d.canon)))
	return h.Sum64()
}

func (d *pinnedDir) path(name string) string { return filepath.Join(d.canon, name) }

// holds reports whether name in the directory is still the regular file f.
func (d *pinnedDir) holds(name string, f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && d.holdsInfo(name, fi)
}

// holdsInfo is holds for a file known by its stat.
func (d *pinnedDir) holdsInfo(name string, fi os.FileInfo) bool {
	g, err := pathcheck.Open(d.path(name), os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer g.Close()
	gi, err := g.Stat()
	return err == nil && gi.Mode().IsRegular() && os.SameFile(fi, gi)
}

// create makes the new file name with CREATE_NEW, which fails on any existing entry,
// link included.
func (d *pinnedDir) create(name string) (*os.File, error) {
	return os.OpenFile(d.path(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
}

// removeIfSame deletes the entry name when it is still the file fi describes.
func (d *pinnedDir) removeIfSame(name string, fi os.FileInfo) {
	if d.holdsInfo(name, fi) {
		_ = os.Remove(d.path(name))
	}
}

// entryStat describes the entry e of a listed directory: on Windows the listing itself
// carries the entry's information (no second look by name), so it is that.
func entryStat(_ *os.File, e fs.DirEntry) (int64, bool, error) {
	fi, err := e.Info()
	if err != nil {
		return 0, false, err
	}
	return fi.Size(), fi.Mode().IsRegular(), nil
}

// sync does nothing: Windows has no directory handle to flush.
func (d *pinnedDir) sync(*sdk.Request) {}
