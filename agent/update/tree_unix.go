//go:build !windows

package update

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/safefile"
	"github.com/yuzugo/yuzu/sdk/semver"
)

// FindTree finds the tree the running binary exe belongs to: exe must be
// Root/<version>/<agent file> with Root/current naming that version. It returns the
// tree and the version exe is, or why there is none (the agent then cannot update
// itself, and says so).
func FindTree(exe, goos string) (Tree, string, error) {
	real, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return Tree{}, "", err
	}
	dir := filepath.Dir(real)
	t := Tree{Root: filepath.Dir(dir), GOOS: goos}
	version := filepath.Base(dir)
	if filepath.Base(real) != AgentFile(goos) || !semver.Valid(version) {
		return Tree{}, "", fmt.Errorf("%s is not in an install tree (<root>/<version>/%s)", real, AgentFile(goos))
	}
	cur, err := t.Current()
	if err != nil {
		return Tree{}, "", fmt.Errorf("%s: %w", t.Root, err)
	}
	if cur != version {
		return Tree{}, "", fmt.Errorf("%s runs version %s, but %s names %s", real, version, filepath.Join(t.Root, CurrentLink), cur)
	}
	fi, err := os.Lstat(t.Root)
	if err != nil {
		return Tree{}, "", err
	}
	if err := safefile.Trusted(fi, false); err != nil {
		return Tree{}, "", fmt.Errorf("%s is %w", t.Root, err)
	}
	return t, version, nil
}

// link reads what a link of the tree names: a version.
func (t Tree) link(name string) (string, error) {
	target, err := os.Readlink(filepath.Join(t.Root, name))
	if err != nil {
		return "", err
	}
	v := filepath.Base(target)
	if !semver.Valid(v) {
		return "", fmt.Errorf("%s names %q, not a version", name, target)
	}
	return v, nil
}

// setLink points the link name at version: a new link beside it renamed over it.
func (t Tree) setLink(name, version string) error {
	var r [6]byte
	_, _ = rand.Read(r[:])
	tmp := filepath.Join(t.Root, "."+name+"-"+hex.EncodeToString(r[:]))
	if err := os.Symlink(version, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(t.Root, name)); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// makeCurrent points current at version and flushes the tree.
func (t Tree) makeCurrent(version string) error {
	if err := t.setLink(CurrentLink, version); err != nil {
		return err
	}
	return atomicfile.SyncDir(t.Root)
}
