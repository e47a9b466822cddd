// Package mounts tells a directory walk which paths sit on a network or a
// pseudo filesystem, so that find_by_hash can refuse them before it touches
// them (docs/filesystem.md, find_by_hash).
//
// The package has three layers: pure parsers and classifiers that turn the
// operating system's mount list into a Table, one Load function per OS that
// gathers that list, and the Table's queries. The queries are string
// comparisons on paths and never touch the filesystem, because a stat or an
// open on a dead hard-mounted network server can block with no deadline.
package mounts

import (
	"errors"
	"path"
	"strings"
)

// ErrUnavailable is wrapped by Load when the mount list could not be read in
// full. The caller then walks without the guard and says so in its output.
var ErrUnavailable = errors.New("mount table unavailable")

// Class says what kind of filesystem holds a path.
type Class int

const (
	// Local is an ordinary filesystem that is safe to walk.
	Local Class = iota
	// Network is a filesystem served over the network (or a removable or
	// remote Windows drive); walking it may block on a dead server.
	Network
	// Pseudo is a kernel or virtual filesystem such as /proc whose entries
	// are not files worth hashing and may block or be endless when read.
	Pseudo
)

// String returns "local", "network" or "pseudo".
func (c Class) String() string {
	switch c {
	case Local:
		return "local"
	case Network:
		return "network"
	case Pseudo:
		return "pseudo"
	}
	return "unknown"
}

// Mount is one entry of the mount list. Fields the OS does not report are
// left at their zero value (on macOS only Point, FSType, Source and Remote
// are filled in).
type Mount struct {
	ID, ParentID int
	Major, Minor uint32
	// Root is the directory of the mounted filesystem that appears at Point
	// (not "/" for a bind mount of a subdirectory).
	Root string
	// Point is the mount point as the current process sees it.
	Point        string
	Options      string
	Optional     []string
	FSType       string
	Source       string
	SuperOptions string
	// Remote is set when the OS itself flags the mount as not local (the
	// macOS MNT_LOCAL flag is clear), whatever its type name says.
	Remote bool
}

// Class classifies the mount with ClassifyMount: by its type name first and
// then by the OS's own locality flag, so a pseudo filesystem that the OS does
// not call local (macOS autofs) still reads as pseudo, except that a FUSE
// mount is judged by its source, since neither its type nor the flag says
// where its data lives.
func (m Mount) Class() Class {
	return ClassifyMount(m.FSType, m.Source, m.Remote)
}

// Table answers which class of filesystem a path is on. The zero value and a
// nil *Table answer Local for every path.
type Table struct {
	// points maps each mount point to the class of the mount on top of it.
	points map[string]Class
	// root, when set, judges a path from its spelling and its volume alone;
	// Windows uses it because it hands the walk no mount list.
	root func(p string) Class
}

// NewTable builds a table from a mount list. When two mounts share a mount
// point the later one wins, because the kernel lists mounts in the order they
// were made and a later mount on the same point hides the earlier one.
func NewTable(ms []Mount) *Table {
	t := &Table{points: make(map[string]Class, len(ms))}
	for _, m := range ms {
		if m.Point == "" || m.Point[0] != '/' {
			continue
		}
		t.points[path.Clean(m.Point)] = m.Class()
	}
	return t
}

// Len returns the number of distinct mount points in the table.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return len(t.points)
}

// Classify returns the class of the filesystem that holds p: that of the
// mount with the longest mount point that equals p or is an ancestor of it on
// a separator boundary (so /mnt/nfs covers /mnt/nfs/a but not /mnt/nfsx). A
// path under no listed mount point is Local. p should be absolute and
// canonical; it is cleaned lexically first.
func (t *Table) Classify(p string) Class {
	if t == nil {
		return Local
	}
	if t.root != nil {
		return t.root(p)
	}
	if len(t.points) == 0 || p == "" || p[0] != '/' {
		return Local
	}
	p = path.Clean(p)
	for {
		if c, ok := t.points[p]; ok {
			return c
		}
		if p == "/" {
			return Local
		}
		i := strings.LastIndexByte(p, '/')
		if i <= 0 {
			p = "/"
		} else {
			p = p[:i]
		}
	}
}

// At reports the class of the mount whose mount point is exactly p. A walk
// that has already judged a directory's parent only needs this exact test for
// each entry: an entry can change filesystem only by being a mount point
// itself. p must be clean; ok is false when p is not a mount point (and always
// on Windows, whose table lists none).
func (t *Table) At(p string) (c Class, ok bool) {
	if t == nil || t.points == nil {
		return Local, false
	}
	c, ok = t.points[p]
	return c, ok
}

// AtBytes is At for a path held in a byte slice; the lookup does not copy it.
func (t *Table) AtBytes(p []byte) (c Class, ok bool) {
	if t == nil || t.points == nil {
		return Local, false
	}
	c, ok = t.points[string(p)]
	return c, ok
}
