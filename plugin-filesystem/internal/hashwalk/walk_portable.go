//go:build !linux

package hashwalk

import (
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/mounts"
)

// The portable walk, used on macOS and Windows, lists directories by path
// and classifies entries from the listing without following them. It is
// weaker than the Linux walk: every directory and file is reached by its full
// path again, so its guarantees depend on what the OS's no-follow open can
// promise (docs/filesystem.md, find_by_hash):
//
//   - macOS opens directories and files with O_NOFOLLOW_ANY, so a symlink
//     swapped into any component is refused, and refuses dataless (not
//     downloaded) items by their SF_DATALESS flag on the open descriptor
//     before reading, so nothing is fetched from a file provider.
//   - Windows opens with FILE_FLAG_OPEN_REPARSE_POINT and judges the handle:
//     a name-surrogate reparse point (symlink, junction, mounted folder) is a
//     link, WOF-compressed and deduplicated files are reopened normally and
//     hashed, cloud placeholders, offline files and other reparse tags are
//     unreadable. A directory is checked that way, then listed through a
//     second open by path, so a directory swapped for a junction between the
//     two is listed (its entries are still judged one by one).

// outcome is how an open by path ended.
type outcome int

const (
	opened outcome = iota
	wasLink
	wasNotRegular
	wasUnreadable
)

func (e *engine) count(o outcome) {
	switch o {
	case wasLink:
		e.symlink.Add(1)
	case wasNotRegular:
		e.notRegular.Add(1)
	case wasUnreadable:
		e.unreadable.Add(1)
	}
}

// readDirBatch bounds how many entries of one directory are held at once.
const readDirBatch = 256

type portableFrame struct {
	f     *os.File
	path  string
	depth int
	batch []fs.DirEntry
	next  int
	done  bool
}

func (e *engine) walk(root string) {
	f, o := openDir(root)
	if o != opened {
		// A root that cannot be listed is unreadable whatever the cause.
		e.unreadable.Add(1)
		return
	}
	stack := []*portableFrame{{f: f, path: root}}
	defer func() {
		for _, fr := range stack {
			fr.f.Close()
		}
	}()
	pop := func() {
		stack[len(stack)-1].f.Close()
		stack = stack[:len(stack)-1]
	}
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		if top.next >= len(top.batch) {
			if top.done {
				pop()
				continue
			}
			batch, err := top.f.ReadDir(readDirBatch)
			top.batch, top.next = batch, 0
			if err != nil {
				top.done = true
				if !errors.Is(err, io.EOF) {
					e.unreadable.Add(1)
				}
			}
			continue
		}
		de := top.batch[top.next]
		top.batch[top.next] = nil
		top.next++
		if !e.nextEntry() {
			return
		}
		p := joinPath(top.path, de.Name())
		depth := top.depth + 1
		mc := e.classifyMount(p)
		if mc == mounts.Network {
			e.network.Add(1)
			continue
		}
		t := de.Type()
		switch {
		case t&fs.ModeSymlink != 0:
			e.symlink.Add(1)
		case t&fs.ModeIrregular != 0:
			e.count(classifyIrregular(p))
		case t.IsDir():
			if depth >= e.maxDepth {
				continue
			}
			if mc == mounts.Pseudo {
				e.unreadable.Add(1)
				continue
			}
			cf, o := openDir(p)
			if o != opened {
				e.count(o)
				continue
			}
			stack = append(stack, &portableFrame{f: cf, path: p, depth: depth})
		case t.IsRegular():
			if mc == mounts.Pseudo {
				e.unreadable.Add(1)
				continue
			}
			r, size, o := openFile(p)
			if o != opened {
				e.count(o)
				continue
			}
			if !e.admitFile(size) {
				r.Close()
				continue
			}
			if !e.enqueue(&job{r: r, size: size, dir: p}) {
				return
			}
		default:
			e.notRegular.Add(1)
		}
	}
}

// classifyMount answers the mount guard for an entry of an already judged
// directory: only an entry that is itself a mount point can change
// filesystem.
func (e *engine) classifyMount(p string) mounts.Class {
	c, _ := e.table.At(p)
	return c
}
