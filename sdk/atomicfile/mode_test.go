//go:build linux

package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

func permOf(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestWriteModeExactWhateverUmask: WriteMode gives a new file, an existing file of
// another mode, and the parent directories it creates exact modes under any umask.
func TestWriteModeExactWhateverUmask(t *testing.T) {
	for _, umask := range []int{0o000, 0o022, 0o077, 0o277} {
		for _, c := range []struct{ perm, dir fs.FileMode }{
			{0o600, 0o700},
			{0o640, 0o750},
			{0o644, 0o755},
		} {
			withUmask(t, umask)
			base := t.TempDir()
			path := filepath.Join(base, "a", "b", "f")
			if err := WriteMode(path, []byte("one"), c.perm); err != nil {
				t.Fatalf("umask %03o perm %v: %v", umask, c.perm, err)
			}
			if got := permOf(t, path); got != c.perm {
				t.Errorf("umask %03o: new file mode %v, want %v", umask, got, c.perm)
			}
			for _, d := range []string{filepath.Join(base, "a"), filepath.Join(base, "a", "b")} {
				if got := permOf(t, d); got != c.dir {
					t.Errorf("umask %03o perm %v: created dir %s mode %v, want %v", umask, c.perm, d, got, c.dir)
				}
			}
			if err := os.Chmod(path, 0o666); err != nil {
				t.Fatal(err)
			}
			if err := WriteMode(path, []byte("two"), c.perm); err != nil {
				t.Fatal(err)
			}
			if got := permOf(t, path); got != c.perm {
				t.Errorf("umask %03o: existing 0666 file got mode %v, want %v", umask, got, c.perm)
			}
			if got := readFile(t, path); got != "two" {
				t.Errorf("content %q", got)
			}
			noTempSiblings(t, filepath.Dir(path))
		}
	}
}

// TestWriteModeExistingDirsUntouched: parents that exist keep their mode.
func TestWriteModeExistingDirsUntouched(t *testing.T) {
	withUmask(t, 0o022)
	base := t.TempDir()
	if err := os.Chmod(base, 0o751); err != nil {
		t.Fatal(err)
	}
	if err := WriteMode(filepath.Join(base, "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := permOf(t, base); got != 0o751 {
		t.Errorf("existing parent mode changed to %v", got)
	}
}

// TestTempCreatedWithFinalMode: the temp file is never more open than the finished
// file, not even between its creation and the chmod. Write on an existing 0600 file
// used to create the temp with 0666 minus the umask and only then narrow it.
func TestTempCreatedWithFinalMode(t *testing.T) {
	cases := []struct {
		name     string
		umask    int
		existing fs.FileMode // 0: no existing file
		write    func(path string) error
		final    fs.FileMode
	}{
		{"WriteMode 0600, umask 0", 0, 0, func(p string) error { return WriteMode(p, []byte("x"), 0o600) }, 0o600},
		{"WriteMode 0640 over 0666, umask 0", 0, 0o666, func(p string) error { return WriteMode(p, []byte("x"), 0o640) }, 0o640},
		{"Write keeps 0600, umask 0", 0, 0o600, func(p string) error { return Write(p, []byte("x")) }, 0o600},
		{"Write keeps 0640, umask 022", 0o022, 0o640, func(p string) error { return Write(p, []byte("x")) }, 0o640},
		{"Write new, umask 0", 0, 0, func(p string) error { return Write(p, []byte("x")) }, 0o666},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			withUmask(t, c.umask)
			path := filepath.Join(t.TempDir(), "f")
			if c.existing != 0 {
				if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(path, c.existing); err != nil {
					t.Fatal(err)
				}
			}
			var atCreation []fs.FileMode
			testHookCreated = func(tmp string) { atCreation = append(atCreation, permOf(t, tmp)) }
			defer func() { testHookCreated = nil }()
			if err := c.write(path); err != nil {
				t.Fatal(err)
			}
			if len(atCreation) != 1 {
				t.Fatalf("hook called %d times", len(atCreation))
			}
			if wider := atCreation[0] &^ c.final; wider != 0 {
				t.Errorf("temp created with mode %v: %v more than the final %v", atCreation[0], wider, c.final)
			}
			if got := permOf(t, path); got != c.final {
				t.Errorf("final mode %v, want %v", got, c.final)
			}
		})
	}
}

// TestWriteModeReplacesSymlink: like Write, WriteMode replaces a symlink at the
// target instead of writing through it, and leaves the link's destination alone.
func TestWriteModeReplacesSymlink(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "dest")
	if err := os.WriteFile(dest, []byte("dest"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "link")
	if err := os.Symlink(dest, path); err != nil {
		t.Fatal(err)
	}
	if err := WriteMode(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("target: %v %v, want a regular 0600 file", fi, err)
	}
	if readFile(t, dest) != "dest" || permOf(t, dest) != 0o644 {
		t.Errorf("symlink destination changed")
	}
}

func TestMkdirAll(t *testing.T) {
	withUmask(t, 0o077)
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(base, "x", "y", "z")
	if err := MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(base, "x"), filepath.Join(base, "x", "y"), deep} {
		if got := permOf(t, d); got != 0o755 {
			t.Errorf("%s mode %v, want 0755 despite umask 077", d, got)
		}
	}
	if got := permOf(t, base); got != 0o755 {
		t.Errorf("existing dir mode changed: %v", got)
	}
	// Existing: nothing changes, and a trailing separator is fine.
	if err := os.Chmod(deep, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(deep+"/", 0o700); err != nil {
		t.Fatal(err)
	}
	if got := permOf(t, deep); got != 0o711 {
		t.Errorf("existing dir mode changed to %v", got)
	}
	// A symlink to a directory on the way is followed, as os.MkdirAll does.
	if err := os.Symlink(deep, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(filepath.Join(base, "link", "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if got := permOf(t, filepath.Join(deep, "sub")); got != 0o700 {
		t.Errorf("sub mode %v", got)
	}
	// A regular file in the way.
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, filepath.Join(file, "sub")} {
		err := MkdirAll(p, 0o700)
		if !errors.Is(err, syscall.ENOTDIR) {
			t.Errorf("MkdirAll(%s) = %v, want ENOTDIR", p, err)
		}
	}
	if err := MkdirAll(file, 0o700); err == nil || err.Error() != "mkdir "+file+": not a directory" {
		t.Errorf("error text %q", err)
	}
	if readFile(t, file) != "x" {
		t.Errorf("blocking file changed")
	}
}

// TestRemoveStale: only exact temp names, only regular files and symlinks, links
// removed without being followed.
func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "tags.json")
	victim := filepath.Join(dir, "victim")
	victimDir := filepath.Join(dir, "victimdir")
	if err := os.WriteFile(victim, []byte("victim"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(victimDir, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removable := []string{
		"tags.json.tmp.0123456789abcdef", // regular file
		"tags.json.tmp.fedcba9876543210", // symlink to a file
		"tags.json.tmp.00000000000000aa", // symlink to a directory
		"tags.json.tmp.00000000000000bb", // dangling symlink
	}
	write(removable[0])
	for i, dest := range []string{victim, victimDir, filepath.Join(dir, "nowhere")} {
		if err := os.Symlink(dest, filepath.Join(dir, removable[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	kept := []string{
		"tags.json", "tags.json.lock",
		"tags.json.tmp.0123456789ABCDEF",   // uppercase
		"tags.json.tmp.0123456789abcde",    // 15 digits
		"tags.json.tmp.0123456789abcdef0",  // 17 digits
		"tags.json.tmp.0123456789abcdeg",   // not hex
		"other.json.tmp.0123456789abcdef",  // another target
		"xtags.json.tmp.0123456789abcdef",  // another target
		"tags.json.tmp.0123456789abcdef.x", // suffix
		"tags.json.corrupt-20260101T000000Z",
	}
	for _, n := range kept {
		write(n)
	}
	if err := os.Mkdir(filepath.Join(dir, "tags.json.tmp.1111111111111111"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "tags.json.tmp.2222222222222222"), 0o600); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, "tags.json.tmp.1111111111111111", "tags.json.tmp.2222222222222222", "victim", "victimdir")

	removed, err := RemoveStale(target)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, n := range removable {
		want = append(want, filepath.Join(dir, n))
	}
	slices.Sort(want)
	slices.Sort(removed)
	if !slices.Equal(removed, want) {
		t.Errorf("removed %v\nwant %v", removed, want)
	}
	var left []string
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		left = append(left, e.Name())
	}
	slices.Sort(kept)
	if !slices.Equal(left, kept) {
		t.Errorf("left %v\nwant %v", left, kept)
	}
	if readFile(t, victim) != "victim" {
		t.Errorf("victim changed")
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("dangling link followed: %v", err)
	}
	// Nothing left to do: a second call removes nothing.
	if removed, err := RemoveStale(target); err != nil || len(removed) != 0 {
		t.Errorf("second call: %v %v", removed, err)
	}
}

func TestRemoveStaleMissingDir(t *testing.T) {
	target := filepath.Join(t.TempDir(), "missing", "f")
	removed, err := RemoveStale(target)
	if !errors.Is(err, fs.ErrNotExist) || len(removed) != 0 {
		t.Errorf("RemoveStale = %v, %v; want a not-exist error", removed, err)
	}
}

// TestRemoveStaleAfterFailedWrite: the temp name Write uses is one RemoveStale
// recognises (a leftover of a crashed Write is cleaned up).
func TestRemoveStaleRecognisesWriteTemp(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "f")
	var tmp string
	testHookCreated = func(p string) {
		tmp = p
		// What a crash right after the creation leaves: a copy under another name
		// survives the deferred removal.
		if err := os.Link(p, p+".keep"); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { testHookCreated = nil }()
	if err := Write(target, []byte("x")); err != nil {
		t.Fatal(err)
	}
	testHookCreated = nil
	if err := os.Rename(tmp+".keep", tmp); err != nil {
		t.Fatal(err)
	}
	removed, err := RemoveStale(target)
	if err != nil || len(removed) != 1 || removed[0] != tmp {
		t.Errorf("RemoveStale = %v, %v; want [%s]", removed, err, tmp)
	}
}
