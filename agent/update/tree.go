package update

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/safefile"
	"github.com/yuzugo/yuzu/sdk/semver"
)

// Tree is the agent's install tree (docs/packages.md): Root/<version>/ holds each
// installed version, Root/current and Root/previous name the running one and the one
// before (symbolic links to the version directories, switched by renaming a new link
// over the old, so a reader sees the old or the new, never neither). The tree is the
// agent's: a package manager copies its own build in and never owns these files, so
// the agent switching versions leaves `dpkg -V` and `rpm -V` honest.
type Tree struct {
	Root string
	// GOOS names the agent binary (AgentFile).
	GOOS string
}

// Link names in the tree.
const (
	CurrentLink  = "current"
	PreviousLink = "previous"
)

// Current is the version current names.
func (t Tree) Current() (string, error) { return t.link(CurrentLink) }

// Previous is the version previous names ("" and an error wrapping fs.ErrNotExist when
// there is none).
func (t Tree) Previous() (string, error) { return t.link(PreviousLink) }

// Binary is the path of version's agent binary.
func (t Tree) Binary(version string) string {
	return filepath.Join(t.Root, version, AgentFile(t.GOOS))
}

// Runnable says whether version's binary is there, whole as far as its directory
// says: a regular executable file no one else can change.
func (t Tree) Runnable(version string) error {
	fi, err := os.Lstat(t.Binary(version))
	if err != nil {
		return err
	}
	// Windows keeps no execute bits: a regular file is what it can tell.
	if !fi.Mode().IsRegular() || (t.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0) {
		return fmt.Errorf("%s is not an executable file", t.Binary(version))
	}
	return safefile.Trusted(fi, false)
}

// Stage writes the bundle's files as Root/<version>: into a new directory beside it,
// every file flushed to disk, the directory too, then renamed into place and the tree
// flushed, so that after a power loss the version is there whole or not at all. A
// version directory already there is replaced the same way.
func (t Tree) Stage(b *Bundle) error {
	version := b.Index.Version
	var r [6]byte
	_, _ = rand.Read(r[:])
	tmp := filepath.Join(t.Root, ".staging-"+version+"-"+hex.EncodeToString(r[:]))
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			_ = os.RemoveAll(tmp)
		}
	}()
	for _, f := range b.Index.Files {
		mode := os.FileMode(0o644)
		if f.Exec {
			mode = 0o755
		}
		if err := writeSynced(filepath.Join(tmp, f.Name), b.Files[f.Name], mode); err != nil {
			return err
		}
	}
	if err := atomicfile.SyncDir(tmp); err != nil {
		return err
	}
	final := filepath.Join(t.Root, version)
	if _, err := os.Lstat(final); err == nil {
		// A version staged before (a download that did not switch): put it aside
		// first; a directory cannot be renamed over a non-empty one.
		old := final + ".old-" + hex.EncodeToString(r[:])
		if err := os.Rename(final, old); err != nil {
			return err
		}
		defer os.RemoveAll(old)
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	done = true
	return atomicfile.SyncDir(t.Root)
}

// writeSynced writes a new file and flushes it to disk.
func writeSynced(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = atomicfile.SyncFile(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(path, mode) // whatever the umask took away
	}
	return err
}

// Switch makes version current and the version that was current previous: on Unix
// links renamed over the old ones, the tree flushed; on Windows the running .exe
// replaced as well (tree_windows.go).
func (t Tree) Switch(version string) error {
	if err := t.Runnable(version); err != nil {
		return fmt.Errorf("not switching to %s: %w", version, err)
	}
	cur, err := t.Current()
	if err != nil {
		return err
	}
	if cur == version {
		return nil
	}
	if err := t.setLink(PreviousLink, cur); err != nil {
		return err
	}
	return t.makeCurrent(version)
}

// Restore makes version current again without touching previous (a rollback: the
// version rolled back from is kept for the record until the next prune).
func (t Tree) Restore(version string) error {
	if err := t.Runnable(version); err != nil {
		return fmt.Errorf("cannot go back to %s: %w", version, err)
	}
	return t.makeCurrent(version)
}

// Prune removes every version directory but current, previous and keep, and what an
// interrupted stage or switch left (staging directories, stray links).
func (t Tree) Prune(keep ...string) error {
	cur, _ := t.Current()
	prev, _ := t.Previous()
	entries, err := os.ReadDir(t.Root)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == CurrentLink || name == PreviousLink || name == cur || name == prev:
			continue
		case strings.HasPrefix(name, ".staging-") || strings.HasPrefix(name, "."+CurrentLink+"-") || strings.HasPrefix(name, "."+PreviousLink+"-") || strings.Contains(name, ".old-"):
		case semver.Valid(name) && e.IsDir():
			if contains(keep, name) {
				continue
			}
		default:
			continue // not the tree's: left alone
		}
		if err := os.RemoveAll(filepath.Join(t.Root, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
