package update

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/windows"

	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/semver"
)

// On Windows the tree keeps the versions as on Unix (Root\<version>\yuzu-agent.exe),
// but `current` and `previous` are small files naming a version (a link needs a
// privilege, and Wine makes none), and the service runs Root\yuzu-agent.exe, a copy of
// the current version's binary. Switching replaces that copy: Windows lets a running
// program's file be renamed but not overwritten, so the running one is renamed aside
// (Root\yuzu-agent.exe.old) and the new one moved into its name.

// RunningExe is the service's binary in the tree.
func (t Tree) RunningExe() string { return filepath.Join(t.Root, AgentFile(t.GOOS)) }

// FindTree finds the tree the running binary exe belongs to: exe must be
// Root\yuzu-agent.exe with Root\current naming a version that Root holds.
func FindTree(exe, goos string) (Tree, string, error) {
	abs, err := filepath.Abs(exe)
	if err != nil {
		return Tree{}, "", err
	}
	t := Tree{Root: filepath.Dir(abs), GOOS: goos}
	if !strings.EqualFold(filepath.Base(abs), AgentFile(goos)) {
		return Tree{}, "", fmt.Errorf("%s is not in an install tree (<root>\\%s with <root>\\current)", abs, AgentFile(goos))
	}
	cur, err := t.Current()
	if err != nil {
		return Tree{}, "", fmt.Errorf("%s is not in an install tree: %w", abs, err)
	}
	if err := t.Runnable(cur); err != nil {
		return Tree{}, "", err
	}
	return t, cur, nil
}

// link reads a version file of the tree.
func (t Tree) link(name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(t.Root, name))
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(b))
	if !semver.Valid(v) {
		return "", fmt.Errorf("%s names %q, not a version", name, v)
	}
	return v, nil
}

// setLink writes a version file: a new file beside it, flushed, moved over it.
func (t Tree) setLink(name, version string) error {
	path := filepath.Join(t.Root, name)
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(version+"\n"), 0o644); err != nil {
		return err
	}
	return moveOver(tmp, path)
}

// moveOver renames from over to, replacing it, through to the disk.
func moveOver(from, to string) error {
	f, err := windows.UTF16PtrFromString(from)
	if err != nil {
		return err
	}
	tt, err := windows.UTF16PtrFromString(to)
	if err != nil {
		return err
	}
	return windows.MoveFileEx(f, tt, windows.MOVEFILE_REPLACE_EXISTING|windows.MOVEFILE_WRITE_THROUGH)
}

// place makes version's binary the running one: a flushed copy beside it, the running
// file renamed aside, the copy moved into its name.
func (t Tree) place(version string) error {
	src, err := os.Open(t.Binary(version))
	if err != nil {
		return err
	}
	defer src.Close()
	var r [6]byte
	_, _ = rand.Read(r[:])
	tmp := t.RunningExe() + ".new-" + hex.EncodeToString(r[:])
	dst, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	if err == nil {
		err = atomicfile.SyncFile(dst)
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	old := t.RunningExe() + ".old"
	// The last one put aside may still be running (an agent that has not exited yet)
	// and then cannot go: it is a name free for this one otherwise.
	if err := os.Remove(old); err != nil && !errors.Is(err, os.ErrNotExist) {
		old += "-" + hex.EncodeToString(r[:])
	}
	if err := moveOver(t.RunningExe(), old); err != nil && !errors.Is(err, os.ErrNotExist) {
		_ = os.Remove(tmp)
		return fmt.Errorf("putting the running %s aside: %w", t.RunningExe(), err)
	}
	if err := moveOver(tmp, t.RunningExe()); err != nil {
		// Put the old one back, so that the service still has a binary.
		_ = moveOver(old, t.RunningExe())
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// makeCurrent makes version's binary the running one and current name it.
func (t Tree) makeCurrent(version string) error {
	if err := t.place(version); err != nil {
		return err
	}
	return t.setLink(CurrentLink, version)
}
