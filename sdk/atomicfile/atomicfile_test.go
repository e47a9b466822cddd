//go:build linux

package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// withUmask runs the test under umask mask and restores the old one afterwards.
func withUmask(t *testing.T, mask int) {
	t.Helper()
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

func inode(t *testing.T, path string) *syscall.Stat_t {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t)
}

func TestWriteNewFileModeFollowsUmask(t *testing.T) {
	cases := []struct {
		umask int
		want  fs.FileMode
	}{
		{0o022, 0o644},
		{0o027, 0o640},
		{0o077, 0o600},
		{0o000, 0o666},
	}
	for _, c := range cases {
		withUmask(t, c.umask)
		dir := t.TempDir()
		path := filepath.Join(dir, "new.txt")
		if err := Write(path, []byte("hello")); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != c.want {
			t.Errorf("umask %03o: mode %v, want %v", c.umask, fi.Mode(), c.want)
		}
		if got := readFile(t, path); got != "hello" {
			t.Errorf("content %q", got)
		}
		noTempSiblings(t, dir)
	}
}

func TestWriteExistingFileKeepsMode(t *testing.T) {
	withUmask(t, 0o022)
	for _, mode := range []fs.FileMode{0o640, 0o600, 0o755, 0o666, 0o400, 0o000} {
		dir := t.TempDir()
		path := filepath.Join(dir, "f")
		if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if err := Write(path, []byte("new")); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("existing %v: mode after write %v", mode, fi.Mode().Perm())
		}
		if got := readFile(t, path); got != "new" {
			t.Errorf("existing %v: content %q", mode, got)
		}
	}
}

func TestWriteNewInodeOldReaderSeesOldContent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "target")
	old := strings.Repeat("old content\n", 1000)
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	// A bystander at the temp name upstream used to use must not be touched.
	bystander := path + ".yuzu_tmp"
	if err := os.WriteFile(bystander, []byte("bystander"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := inode(t, path)
	reader, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()

	if err := Write(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	after := inode(t, path)
	if after.Ino == before.Ino {
		t.Errorf("inode unchanged (%d): the file was rewritten in place", after.Ino)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(reader.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if st.Nlink != 0 {
		t.Errorf("old inode link count %d, want 0", st.Nlink)
	}
	got, err := io.ReadAll(reader)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != old {
		t.Errorf("reader of the old file saw %d bytes, not the complete old content", len(got))
	}
	if readFile(t, path) != "new" || readFile(t, bystander) != "bystander" {
		t.Errorf("target or bystander content wrong")
	}
	noTempSiblings(t, dir)
}

func TestWriteHardLinkKeepsOldContent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "target")
	link := filepath.Join(dir, "link")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(path, link); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if readFile(t, path) != "new" || readFile(t, link) != "old" {
		t.Errorf("target %q link %q; want new and old", readFile(t, path), readFile(t, link))
	}
}

func TestWriteReplacesSymlinkNotItsDestination(t *testing.T) {
	withUmask(t, 0o022)
	dir := t.TempDir()
	dest := filepath.Join(dir, "dest")
	if err := os.WriteFile(dest, []byte("dest content"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "link")
	if err := os.Symlink(dest, path); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() {
		t.Errorf("target is %v, want a regular file", fi.Mode())
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("replaced symlink got mode %v, want 0644 (new-file mode)", fi.Mode().Perm())
	}
	if readFile(t, path) != "new" || readFile(t, dest) != "dest content" {
		t.Errorf("target %q dest %q", readFile(t, path), readFile(t, dest))
	}
}

func TestWriteCreatesParents(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a", "b", "c", "f.json")
	if err := Write(path, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if readFile(t, path) != "{}" {
		t.Errorf("content wrong")
	}
}

func TestWriteEmptyContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("something"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "" {
		t.Errorf("content %q, want empty", got)
	}
}

func TestWriteFailures(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string) (path string)
		want  error
	}{
		{"parent is a regular file", func(t *testing.T, dir string) string {
			if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(dir, "file", "sub", "target")
		}, syscall.ENOTDIR},
		{"target is a directory", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "adir")
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(p, "keep"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := c.setup(t, dir)
			err := Write(path, []byte("data"))
			if err == nil {
				t.Fatalf("Write(%s) succeeded", path)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the path", err)
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("error %v does not wrap %v", err, c.want)
			}
			noTempSiblings(t, dir)
			if fi, err := os.Stat(filepath.Dir(path)); err == nil && fi.IsDir() {
				noTempSiblings(t, filepath.Dir(path))
			}
		})
	}
}

// The temp name is random, so the collision rule is checked on the open the write
// uses: an existing file or a symlink at the temp path makes it fail, and neither it
// nor what a symlink points at is touched.
func TestOpenExclusiveRefusesExistingPath(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("victim"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		setup func(tmp string) error
	}{
		{"regular file", func(tmp string) error { return os.WriteFile(tmp, []byte("leftover"), 0o644) }},
		{"symlink to a file", func(tmp string) error { return os.Symlink(victim, tmp) }},
		{"dangling symlink", func(tmp string) error { return os.Symlink(filepath.Join(dir, "nowhere"), tmp) }},
	}
	for i, c := range cases {
		tmp := filepath.Join(dir, "target.tmp.000000000000000"+string(rune('0'+i)))
		if err := c.setup(tmp); err != nil {
			t.Fatal(err)
		}
		f, err := openExclusive(tmp, 0o666)
		if err == nil {
			f.Close()
			t.Errorf("%s: openExclusive succeeded over an existing path", c.name)
			continue
		}
		if !errors.Is(err, fs.ErrExist) {
			t.Errorf("%s: error %v, want one wrapping fs.ErrExist", c.name, err)
		}
	}
	if readFile(t, victim) != "victim" {
		t.Errorf("symlink destination changed")
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("dangling symlink was followed and created its destination")
	}
}

func TestTempNameShape(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		name, err := TempName("/d/target")
		if err != nil {
			t.Fatal(err)
		}
		suffix, ok := strings.CutPrefix(name, "/d/target.tmp.")
		if !ok || len(suffix) != 16 || strings.Trim(suffix, "0123456789abcdef") != "" {
			t.Fatalf("temp name %q: want /d/target.tmp.<16 lowercase hex>", name)
		}
		if seen[name] {
			t.Fatalf("temp name %q repeated", name)
		}
		seen[name] = true
	}
}
