package hashwalk

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/mounts"
	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
)

// The Linux walk resolves the root once and opens everything else relative
// to its parent directory's descriptor, one name at a time and without
// following a final symlink. A symlink swapped in anywhere after the root was
// opened can therefore never lead the walk outside the tree: the parent is
// pinned by its descriptor, and the name itself is refused if it is a link.
// pathcheck.OpenBeneath does the opening: openat2 with
// RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH where the kernel has it, openat with
// O_NOFOLLOW otherwise, one system call per entry below the root either way.
// The root's own path goes through it too, so a link in any of its components
// is refused, with or without openat2.

// Test hooks, nil outside tests: called with a path just before the walk
// opens it, so a test can swap the entry at the worst moment.
var beforeOpenDir, beforeOpenFile atomic.Pointer[func(path string)]

func runHook(h *atomic.Pointer[func(string)], path string) {
	if f := h.Load(); f != nil {
		(*f)(path)
	}
}

const dirOpenFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK

// direntBufSize is the getdents64 buffer of one directory level; a walk
// holds at most one per level.
const direntBufSize = 32 << 10

type frame struct {
	d     dirReader
	path  string
	depth int
	dev   uint64
}

func (e *engine) walk(root string) {
	fd, err := pathcheck.OpenBeneath(unix.AT_FDCWD, root, dirOpenFlags)
	if err != nil {
		e.unreadable.Add(1)
		return
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		e.unreadable.Add(1)
		return
	}
	switch fsClass(fd) {
	case mounts.Network:
		unix.Close(fd)
		e.network.Add(1)
		return
	case mounts.Pseudo:
		unix.Close(fd)
		e.unreadable.Add(1)
		return
	}
	noatime := 0
	if unix.Geteuid() == 0 {
		// Reads never alter the target, not even its access time.
		noatime = unix.O_NOATIME
	}

	// Directories are listed at depths 0..MaxDepth-1, one buffer per level.
	bufs := make([][]byte, e.maxDepth)
	bufAt := func(depth int) []byte {
		if bufs[depth] == nil {
			bufs[depth] = make([]byte, direntBufSize)
		}
		return bufs[depth]
	}
	scratch := make([]byte, 0, 512)
	nameZ := make([]byte, 0, 257) // a file's name and its NUL (openFile)
	// Each file queued is filled into fileJob (the queue takes a copy), so a
	// file costs no allocation.
	fileJob := new(job)
	stack := make([]frame, 0, e.maxDepth)
	stack = append(stack, frame{d: dirReader{fd: fd, buf: bufAt(0)}, path: root, dev: uint64(st.Dev)})
	defer func() {
		for i := range stack {
			unix.Close(stack[i].d.fd)
		}
	}()
	pop := func() {
		unix.Close(stack[len(stack)-1].d.fd)
		stack = stack[:len(stack)-1]
	}

	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		rawName, typ, ok, err := top.d.next()
		if err != nil {
			// The rest of this directory cannot be listed.
			e.unreadable.Add(1)
			pop()
			continue
		}
		if !ok {
			pop()
			continue
		}
		if !e.nextEntry() {
			return
		}
		// The entry's path is built in a scratch buffer for the mount
		// check; only a directory's is kept, as its frame's path.
		scratch = appendPath(scratch[:0], top.path, rawName)
		depth := top.depth + 1
		mc := e.classifyMountBytes(scratch)
		if mc == mounts.Network {
			e.network.Add(1)
			continue
		}
		if typ == unix.DT_UNKNOWN {
			// Some filesystems leave the type out of the listing.
			var est unix.Stat_t
			if err := unix.Fstatat(top.d.fd, string(rawName), &est, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				e.unreadable.Add(1)
				continue
			}
			typ = direntType(est.Mode)
		}
		switch typ {
		case unix.DT_LNK:
			e.symlink.Add(1)
		case unix.DT_DIR:
			if depth >= e.maxDepth {
				continue
			}
			if mc == mounts.Pseudo {
				e.unreadable.Add(1)
				continue
			}
			p := string(scratch)
			cfd, dev, ok := e.openDir(top.d.fd, p[len(p)-len(rawName):], p, top.dev)
			if ok {
				stack = append(stack, frame{d: dirReader{fd: cfd, buf: bufAt(depth)}, path: p, depth: depth, dev: dev})
			}
		case unix.DT_REG:
			if mc == mounts.Pseudo {
				e.unreadable.Add(1)
				continue
			}
			if !e.openFile(top.d.fd, top.path, rawName, noatime, fileJob, &nameZ) {
				return
			}
		default:
			e.notRegular.Add(1)
		}
	}
}

// openDir opens a subdirectory for listing and counts the reason when it
// cannot be entered.
func (e *engine) openDir(parent int, name, path string, parentDev uint64) (int, uint64, bool) {
	runHook(&beforeOpenDir, path)
	fd, err := pathcheck.OpenBeneath(parent, name, dirOpenFlags)
	if err != nil {
		// A link or something else swapped in after the listing. With
		// O_DIRECTORY the kernel may answer ENOTDIR for a link, so the check
		// looks at the name itself when it has to.
		if pathcheck.IsSymlinkErr(parent, name, err) {
			e.symlink.Add(1)
		} else {
			e.unreadable.Add(1)
		}
		return -1, 0, false
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		e.unreadable.Add(1)
		return -1, 0, false
	}
	if uint64(st.Dev) != parentDev {
		// A filesystem boundary: ask the kernel what is really mounted
		// here, which catches mounts the table missed.
		switch fsClass(fd) {
		case mounts.Network:
			unix.Close(fd)
			e.network.Add(1)
			return -1, 0, false
		case mounts.Pseudo:
			unix.Close(fd)
			e.unreadable.Add(1)
			return -1, 0, false
		}
	}
	return fd, uint64(st.Dev), true
}

// openFile opens a regular file without following it and without blocking,
// judges it on the descriptor and queues it for hashing. It returns false
// when the walk has stopped. dir is the path of the directory parent holds; j
// is the walk's scratch job, which the file is filled into.
func (e *engine) openFile(parent int, dir string, name []byte, noatime int, j *job, nameZ *[]byte) bool {
	if h := beforeOpenFile.Load(); h != nil {
		(*h)(joinPath(dir, string(name)))
	}
	// The name is only read during the calls below, while the listing
	// buffer it points into stays as it is: no copy per file. The open takes
	// it NUL-terminated, from the walk's own buffer (nameZ), so that it makes
	// no copy either.
	sname := unsafe.String(unsafe.SliceData(name), len(name))
	*nameZ = append(append((*nameZ)[:0], name...), 0)
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOCTTY
	fd, err := pathcheck.OpenEntry(parent, *nameZ, flags|noatime)
	if noatime != 0 && errors.Is(err, unix.EPERM) {
		fd, err = pathcheck.OpenEntry(parent, *nameZ, flags)
	}
	if err != nil {
		switch {
		case pathcheck.IsSymlinkErr(parent, sname, err):
			e.symlink.Add(1)
		case errors.Is(err, unix.ENXIO), errors.Is(err, unix.ENODEV):
			// A socket or a device swapped in after the listing.
			e.notRegular.Add(1)
		default:
			e.unreadable.Add(1)
		}
		return true
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		e.unreadable.Add(1)
		return true
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		e.notRegular.Add(1)
		return true
	}
	if !e.admitFile(st.Size) {
		unix.Close(fd)
		return true
	}
	j.fd, j.size = fd, st.Size
	j.setPath(dir, name)
	return e.enqueue(j)
}

func fsClass(fd int) mounts.Class {
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		return mounts.Local
	}
	return mounts.ClassifyMagic(uint32(sfs.Type))
}

func direntType(mode uint32) uint8 {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return unix.DT_REG
	case unix.S_IFDIR:
		return unix.DT_DIR
	case unix.S_IFLNK:
		return unix.DT_LNK
	case unix.S_IFIFO:
		return unix.DT_FIFO
	case unix.S_IFSOCK:
		return unix.DT_SOCK
	case unix.S_IFCHR:
		return unix.DT_CHR
	case unix.S_IFBLK:
		return unix.DT_BLK
	}
	return unix.DT_UNKNOWN
}

// setPath names the job's file: name inside dir.
func (j *job) setPath(dir string, name []byte) {
	if len(name) > nameMax {
		j.dir, j.nameLen = joinPath(dir, string(name)), 0
		return
	}
	j.dir, j.nameLen = dir, copy(j.name[:], name)
}

// classifyMountBytes answers the mount guard for an entry of an already judged
// directory, its path in a scratch buffer: only an entry that is itself a
// mount point can change filesystem.
func (e *engine) classifyMountBytes(p []byte) mounts.Class {
	c, _ := e.table.AtBytes(p)
	return c
}

// appendPath appends dir joined with name to b, as joinPath spells it.
func appendPath(b []byte, dir string, name []byte) []byte {
	b = append(b, dir...)
	if len(dir) == 0 || (dir[len(dir)-1] != '/' && dir[len(dir)-1] != filepath.Separator) {
		b = append(b, filepath.Separator)
	}
	return append(b, name...)
}
