package pathcheck

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// newTree builds the attack playground and returns its canonical root:
//
//	base/file.txt, base/sub/inner.txt
//	base/link_in -> file.txt              base/link_out -> ../outside/secret.txt
//	base/abs_out -> <root>/outside/secret.txt
//	base/dirlink_in -> sub                base/dirlink_out -> ../outside
//	base/dangling -> nowhere              base/loop1 <-> base/loop2
//	base/chain -> link_in                 base/chain_out -> dirlink_out/secret.txt
//	base/fifo                             outside/secret.txt
//	outside/back_in -> ../base/file.txt   basebackup/file.txt
//	base_link -> base                     dangling_base -> gone
func newTree(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"base/sub", "outside", "basebackup"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range map[string]string{
		"base/file.txt": "inside\n", "base/sub/inner.txt": "inner\n",
		"outside/secret.txt": "secret\n", "basebackup/file.txt": "sibling\n",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"base/link_in": "file.txt", "base/link_out": "../outside/secret.txt",
		"base/abs_out":    filepath.Join(root, "outside/secret.txt"),
		"base/dirlink_in": "sub", "base/dirlink_out": "../outside",
		"base/dangling": "nowhere", "base/loop1": "loop2", "base/loop2": "loop1",
		"base/chain": "link_in", "base/chain_out": "dirlink_out/secret.txt",
		"outside/back_in": "../base/file.txt", "base_link": "base", "dangling_base": "gone",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mkfifo(filepath.Join(root, "base/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestValidateAttacks is the table of hostile inputs for Validate, ValidateOrParent and
// ValidateNew. In raw, base and want, "@" stands for the tree's root.
func TestValidateAttacks(t *testing.T) {
	root := newTree(t)
	t.Chdir(filepath.Join(root, "base"))
	outsideFile, err := os.Open(filepath.Join(root, "outside/secret.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer outsideFile.Close()
	fdLink := "/proc/self/fd/" + strconv.Itoa(int(outsideFile.Fd()))
	dotdots := strings.Repeat("../", 64) + strings.TrimPrefix(root, "/")

	const (
		validate = iota
		orParent
		newFile
	)
	tests := []struct {
		name      string
		fn        int
		raw, base string
		want      string // expected result; "" when err is set
		err       error
	}{
		{"plain file inside", validate, "@/base/file.txt", "@/base", "@/base/file.txt", nil},
		{"nested file inside", validate, "@/base/sub/inner.txt", "@/base", "@/base/sub/inner.txt", nil},
		{"base itself", validate, "@/base", "@/base", "@/base", nil},
		{"base with trailing slash", validate, "@/base/", "@/base", "@/base", nil},
		{"dot-dot staying inside", validate, "@/base/sub/../file.txt", "@/base", "@/base/file.txt", nil},
		{"dot-dot escape", validate, "@/base/../outside/secret.txt", "@/base", "", ErrOutside},
		{"double dot-dot escape", validate, "@/base/sub/../../outside/secret.txt", "@/base", "", ErrOutside},
		{"dot-dot past the filesystem root", validate, "@/base/" + dotdots + "/outside/secret.txt", "@/base", "", ErrOutside},
		{"relative link inside", validate, "@/base/link_in", "@/base", "@/base/file.txt", nil},
		{"relative link escaping", validate, "@/base/link_out", "@/base", "", ErrOutside},
		{"absolute link escaping", validate, "@/base/abs_out", "@/base", "", ErrOutside},
		{"directory link inside", validate, "@/base/dirlink_in/inner.txt", "@/base", "@/base/sub/inner.txt", nil},
		{"directory link escaping", validate, "@/base/dirlink_out/secret.txt", "@/base", "", ErrOutside},
		{"directory link escaping, trailing slash", validate, "@/base/dirlink_out/", "@/base", "", ErrOutside},
		{"link resolved before dot-dot", validate, "@/base/dirlink_out/../base/file.txt", "@/base", "@/base/file.txt", nil},
		{"link then dot-dot leaving base", validate, "@/base/dirlink_out/../outside/secret.txt", "@/base", "", ErrOutside},
		{"link chain inside", validate, "@/base/chain", "@/base", "@/base/file.txt", nil},
		{"link chain escaping", validate, "@/base/chain_out", "@/base", "", ErrOutside},
		{"outside link pointing inside", validate, "@/outside/back_in", "@/base", "@/base/file.txt", nil},
		{"dangling link", validate, "@/base/dangling", "@/base", "", ErrNotExist},
		{"link loop", validate, "@/base/loop1", "@/base", "", ErrNotExist},
		{"missing file", validate, "@/base/missing", "@/base", "", ErrNotExist},
		{"prefix sibling", validate, "@/basebackup/file.txt", "@/base", "", ErrOutside},
		{"prefix sibling via dot-dot", validate, "@/base/../basebackup/file.txt", "@/base", "", ErrOutside},
		{"base given through a link", validate, "@/base/file.txt", "@/base_link", "@/base/file.txt", nil},
		{"path given through a link to base", validate, "@/base_link/sub/inner.txt", "@/base", "@/base/sub/inner.txt", nil},
		{"/proc/self/root prefix inside", validate, "/proc/self/root@/base/file.txt", "@/base", "@/base/file.txt", nil},
		{"/proc/self/root prefix escaping", validate, "/proc/self/root@/outside/secret.txt", "@/base", "", ErrOutside},
		{"/proc/self/cwd", validate, "/proc/self/cwd/file.txt", "@/base", "@/base/file.txt", nil},
		{"/proc/self/fd magic link escaping", validate, fdLink, "@/base", "", ErrOutside},
		{"NUL in path", validate, "@/base/file.txt\x00.jpg", "@/base", "", ErrNUL},
		{"NUL in base", validate, "@/base/file.txt", "@/base\x00", "", ErrNUL},
		{"over-long path", validate, "@/" + strings.Repeat("a", MaxLen), "@/base", "", ErrTooLong},
		{"over-long base", validate, "@/base/file.txt", "/" + strings.Repeat("b", MaxLen), "", ErrTooLong},
		{"empty path", validate, "", "@/base", "", ErrEmpty},
		{"missing base", validate, "@/base/file.txt", "@/nobase", "", ErrBaseDir},
		{"dangling base", validate, "@/base/file.txt", "@/dangling_base", "", ErrBaseDir},
		{"root as base contains everything", validate, "@/outside/secret.txt", "/", "@/outside/secret.txt", nil},
		{"relative path inside", validate, "sub/inner.txt", "@/base", "@/base/sub/inner.txt", nil},
		{"relative path escaping", validate, "../outside/secret.txt", "@/base", "", ErrOutside},
		{"repeated slashes", validate, "@//base///sub//inner.txt", "@/base", "@/base/sub/inner.txt", nil},
		{"FIFO inside is a valid path", validate, "@/base/fifo", "@/base", "@/base/fifo", nil},
		{"no base: no narrowing", validate, "@/base/link_out", "", "@/outside/secret.txt", nil},

		{"new file inside", orParent, "@/base/new.txt", "@/base", "@/base/new.txt", nil},
		{"new file returned as written", orParent, "@/base/sub/../new.txt", "@/base", "@/base/sub/../new.txt", nil},
		{"new file under escaping link", orParent, "@/base/dirlink_out/new.txt", "@/base", "", ErrOutside},
		{"new file escaping by dot-dot", orParent, "@/base/../outside/new.txt", "@/base", "", ErrOutside},
		{"new file in missing directory", orParent, "@/base/nodir/new.txt", "@/base", "", ErrNotExist},
		{"new bare name", orParent, "new.txt", "@/base", "", ErrNoParent},
		{"existing file canonicalised", orParent, "@/base/link_in", "@/base", "@/base/file.txt", nil},
		{"existing escaping link", orParent, "@/base/link_out", "@/base", "", ErrOutside},
		{"dangling link counts as new", orParent, "@/base/dangling", "@/base", "@/base/dangling", nil},
		{"NUL in new path", orParent, "@/base/new\x00", "@/base", "", ErrNUL},

		{"create path inside", newFile, "@/base/new.txt", "@/base", "@/base/new.txt", nil},
		{"create path through inner link", newFile, "@/base/dirlink_in/new.txt", "@/base", "@/base/sub/new.txt", nil},
		{"create path through escaping link", newFile, "@/base/dirlink_out/new.txt", "@/base", "", ErrOutside},
		{"create path without a name", newFile, "@/base/sub/", "@/base", "", ErrNotCanonical},
		{"create path ending in dot-dot", newFile, "@/base/sub/..", "@/base", "", ErrNotCanonical},
	}
	at := func(s string) string { return strings.ReplaceAll(s, "@", root) }
	for _, tc := range tests {
		var got string
		b, err := OpenBase(at(tc.base))
		if err == nil {
			switch tc.fn {
			case validate:
				got, err = Validate(at(tc.raw), b)
			case orParent:
				got, err = ValidateOrParent(at(tc.raw), b)
			default:
				got, err = ValidateNew(at(tc.raw), b)
			}
			b.Close()
		}
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("%s: got %q, %v; want error %v", tc.name, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != at(tc.want) {
			t.Errorf("%s: got %q, %v; want %q", tc.name, got, err, at(tc.want))
		}
	}
}

// TestOpenAttacks swaps parts of a validated path for links and checks that opening
// the canonical path then fails, with openat2 and with the fallback walk.
func TestOpenAttacks(t *testing.T) {
	type env struct {
		root, base string
		b          *Base // base, held open
	}
	tests := []struct {
		name string
		// run validates, tampers and opens; it returns the opened file or the error.
		run  func(t *testing.T, e env) (*os.File, error)
		err  error  // wanted error; nil: the open must succeed
		read string // with err nil: the content to read
	}{
		{"canonical file", func(t *testing.T, e env) (*os.File, error) {
			return OpenIn(e.b, mustValidate(t, e.base+"/link_in", e.b), os.O_RDONLY, 0)
		}, nil, "inside\n"},
		{"directory swapped for a link inside base", func(t *testing.T, e env) (*os.File, error) {
			p := mustValidate(t, e.base+"/sub/inner.txt", e.b)
			must(t, os.Rename(e.base+"/sub", e.base+"/sub_real"))
			must(t, os.Symlink("sub_real", e.base+"/sub"))
			return Open(p, os.O_RDONLY, 0)
		}, ErrSymlink, ""},
		{"directory swapped for a link leaving base", func(t *testing.T, e env) (*os.File, error) {
			p := mustValidate(t, e.base+"/sub/inner.txt", e.b)
			must(t, os.Rename(e.base+"/sub", e.base+"/sub_old"))
			must(t, os.WriteFile(e.root+"/outside/inner.txt", []byte("secret\n"), 0o644))
			must(t, os.Symlink("../outside", e.base+"/sub"))
			return OpenIn(e.b, p, os.O_RDONLY, 0)
		}, ErrSymlink, ""},
		{"last element swapped for a link", func(t *testing.T, e env) (*os.File, error) {
			p := mustValidate(t, e.base+"/file.txt", e.b)
			must(t, os.Remove(p))
			must(t, os.Symlink("../outside/secret.txt", p))
			return OpenIn(e.b, p, os.O_RDONLY, 0)
		}, ErrSymlink, ""},
		{"last element swapped, O_PATH", func(t *testing.T, e env) (*os.File, error) {
			p := mustValidate(t, e.base+"/file.txt", e.b)
			must(t, os.Remove(p))
			must(t, os.Symlink("../outside/secret.txt", p))
			return Open(p, unix.O_PATH, 0)
		}, ErrSymlink, ""},
		{"last element swapped, O_PATH|O_NOFOLLOW", func(t *testing.T, e env) (*os.File, error) {
			p := mustValidate(t, e.base+"/file.txt", e.b)
			must(t, os.Remove(p))
			must(t, os.Symlink("../outside/secret.txt", p))
			return Open(p, unix.O_PATH|unix.O_NOFOLLOW, 0)
		}, ErrSymlink, ""},
		{"last element swapped, writing", func(t *testing.T, e env) (*os.File, error) {
			p := mustValidate(t, e.base+"/file.txt", e.b)
			must(t, os.Remove(p))
			must(t, os.Symlink("../outside/secret.txt", p))
			return Open(p, os.O_WRONLY|os.O_APPEND, 0)
		}, ErrSymlink, ""},
		{"base swapped for a link to elsewhere after it was opened", func(t *testing.T, e env) (*os.File, error) {
			// The base is held: opens stay in the directory that was resolved,
			// wherever it has been moved, and never follow the new name.
			p := mustValidate(t, e.base+"/file.txt", e.b)
			must(t, os.Rename(e.base, e.root+"/base_moved"))
			must(t, os.Symlink("outside", e.base))
			must(t, os.WriteFile(e.root+"/outside/file.txt", []byte("secret\n"), 0o644))
			return OpenIn(e.b, p, os.O_RDONLY, 0)
		}, nil, "inside\n"},
		{"path outside base", func(t *testing.T, e env) (*os.File, error) {
			return OpenIn(e.b, e.root+"/outside/secret.txt", os.O_RDONLY, 0)
		}, ErrOutside, ""},
		{"prefix sibling of base", func(t *testing.T, e env) (*os.File, error) {
			return OpenIn(e.b, e.root+"/basebackup/file.txt", os.O_RDONLY, 0)
		}, ErrOutside, ""},
		{"relative path refused", func(t *testing.T, e env) (*os.File, error) {
			return Open("base/file.txt", os.O_RDONLY, 0)
		}, ErrNotCanonical, ""},
		{"dot-dot refused", func(t *testing.T, e env) (*os.File, error) {
			return OpenIn(e.b, e.base+"/../outside/secret.txt", os.O_RDONLY, 0)
		}, ErrNotCanonical, ""},
		{"magic link refused", func(t *testing.T, e env) (*os.File, error) {
			return Open("/proc/self/root"+e.base+"/file.txt", os.O_RDONLY, 0)
		}, ErrSymlink, ""},
		{"create new file", func(t *testing.T, e env) (*os.File, error) {
			p, err := ValidateNew(e.base+"/dirlink_in/created.txt", e.b)
			must(t, err)
			return OpenIn(e.b, p, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
		}, nil, ""},
		{"base directory itself", func(t *testing.T, e env) (*os.File, error) {
			return OpenIn(e.b, e.base, os.O_RDONLY, 0)
		}, nil, ""},
		{"NUL refused", func(t *testing.T, e env) (*os.File, error) {
			return Open(e.base+"/file.txt\x00", os.O_RDONLY, 0)
		}, ErrNUL, ""},
	}
	for _, walk := range []bool{false, true} {
		if !walk && !haveOpenat2() {
			t.Log("openat2 is not available here; only the fallback walk is tested")
			continue
		}
		for _, tc := range tests {
			root := newTree(t)
			e := env{root: root, base: root + "/base"}
			e.b = openBase(t, e.base)
			forceWalk.Store(walk)
			f, err := tc.run(t, e)
			forceWalk.Store(false)
			label := tc.name + map[bool]string{false: " (openat2)", true: " (walk)"}[walk]
			if tc.err != nil {
				if f != nil {
					f.Close()
				}
				if !errors.Is(err, tc.err) {
					t.Errorf("%s: err = %v, want %v", label, err, tc.err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %v", label, err)
				continue
			}
			if tc.read != "" {
				b, err := io.ReadAll(f)
				if err != nil || string(b) != tc.read {
					t.Errorf("%s: read %q, %v; want %q", label, b, err, tc.read)
				}
			}
			f.Close()
		}
	}
}

func TestCreateRefusesPlantedLink(t *testing.T) {
	root := newTree(t)
	base := root + "/base"
	b := openBase(t, base)
	p, err := ValidateNew(base+"/planted", b)
	must(t, err)
	must(t, os.Symlink("../outside/planted_target", p))
	for _, walk := range []bool{false, true} {
		forceWalk.Store(walk)
		f, err := OpenIn(b, p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		forceWalk.Store(false)
		if err == nil {
			f.Close()
			t.Fatalf("walk=%v: creating over a planted link succeeded", walk)
		}
		if _, err := os.Lstat(root + "/outside/planted_target"); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("walk=%v: the link target was created", walk)
		}
	}
}

func TestCheckInsideAfterMove(t *testing.T) {
	root := newTree(t)
	base := root + "/base"
	b := openBase(t, base)
	f, err := OpenIn(b, mustValidate(t, base+"/sub/inner.txt", b), os.O_RDONLY, 0)
	must(t, err)
	defer f.Close()
	if err := CheckInside(f, b); err != nil {
		t.Fatalf("CheckInside before the move: %v", err)
	}
	must(t, os.Rename(base+"/sub", root+"/outside/moved"))
	if err := CheckInside(f, b); !errors.Is(err, ErrOutside) {
		t.Errorf("CheckInside after moving the directory out: %v", err)
	}
	if p, err := RealPath(f); err != nil || p != root+"/outside/moved/inner.txt" {
		t.Errorf("RealPath = %q, %v", p, err)
	}
	if err := CheckInside(f, nil); err != nil {
		t.Errorf("CheckInside without base: %v", err)
	}
}

func mustValidate(t *testing.T, raw string, b *Base) string {
	t.Helper()
	p, err := Validate(raw, b)
	if err != nil {
		t.Fatalf("Validate(%q, %q): %v", raw, b.Path(), err)
	}
	return p
}

// openBase opens base as OpenBase does for the length of the test.
func openBase(t *testing.T, base string) *Base {
	t.Helper()
	b, err := OpenBase(base)
	if err != nil {
		t.Fatalf("OpenBase(%q): %v", base, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestOpenBeneath opens entries of the attack tree relative to a descriptor of its
// base, as a walker does, with openat2 and with the fallback.
func TestOpenBeneath(t *testing.T) {
	root := newTree(t)
	base := root + "/base"
	// No O_NOFOLLOW here: refusing links is OpenBeneath's job, not the caller's.
	const fileFlags = unix.O_RDONLY | unix.O_NONBLOCK
	const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NONBLOCK
	tests := []struct {
		name    string
		flags   int
		ok      bool
		symlink bool // with ok false: whether IsSymlinkErr must say a link was met
	}{
		{"file.txt", fileFlags, true, false},
		{"sub", dirFlags, true, false},
		{"sub/inner.txt", fileFlags, true, false},
		{".", dirFlags, true, false},
		{"link_in", fileFlags, false, true},
		{"link_out", fileFlags, false, true},
		{"abs_out", fileFlags, false, true},
		{"dangling", fileFlags, false, true},
		{"loop1", fileFlags, false, true},
		{"dirlink_in", dirFlags, false, true},
		{"dirlink_out", dirFlags, false, true},
		{"dirlink_in/inner.txt", fileFlags, false, true},
		{"dirlink_out/secret.txt", fileFlags, false, true},
		{"..", dirFlags, false, false},
		{"../outside/secret.txt", fileFlags, false, false},
		{"missing", fileFlags, false, false},
		{"file.txt", dirFlags, false, false},
		{"new", fileFlags | unix.O_CREAT, false, false},
		{"new", unix.O_TMPFILE | unix.O_RDWR, false, false},
	}
	for _, walk := range []bool{false, true} {
		if !walk && !Openat2Available() {
			t.Log("openat2 is not available here; only the fallback is tested")
			continue
		}
		ForceFallback(walk)
		dfd, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		must(t, err)
		for _, tc := range tests {
			label := tc.name + map[bool]string{false: " (openat2)", true: " (walk)"}[walk]
			fd, err := OpenBeneath(dfd, tc.name, tc.flags)
			if err == nil {
				flags, ferr := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
				unix.Close(fd)
				if !tc.ok {
					t.Errorf("%s: opened, want a refusal", label)
				} else if ferr != nil || flags&unix.FD_CLOEXEC == 0 {
					t.Errorf("%s: descriptor is not close-on-exec (%#x, %v)", label, flags, ferr)
				}
				continue
			}
			if tc.ok {
				t.Errorf("%s: %v", label, err)
				continue
			}
			if got := IsSymlinkErr(dfd, tc.name, err); got != tc.symlink {
				t.Errorf("%s: IsSymlinkErr(%v) = %v, want %v", label, err, got, tc.symlink)
			}
		}
		if _, err := os.Lstat(base + "/new"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("walk=%v: OpenBeneath created a file", walk)
		}
		unix.Close(dfd)

		// From AT_FDCWD the path is absolute and a link in any element is refused.
		fd, err := OpenBeneath(unix.AT_FDCWD, base+"/sub/inner.txt", fileFlags)
		if err != nil {
			t.Errorf("walk=%v: absolute path: %v", walk, err)
		} else {
			unix.Close(fd)
		}
		for _, p := range []string{root + "/base_link/file.txt", base + "/dirlink_in/inner.txt", base + "/link_in"} {
			if fd, err := OpenBeneath(unix.AT_FDCWD, p, fileFlags); err == nil {
				unix.Close(fd)
				t.Errorf("walk=%v: %s opened through a link", walk, p)
			}
		}
		ForceFallback(false)
	}
}

func TestIsSymlinkErr(t *testing.T) {
	root := newTree(t)
	dfd, err := unix.Open(root+"/base", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(dfd)
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"file.txt", nil, false},
		{"file.txt", unix.ELOOP, true},
		{"file.txt", ErrSymlink, true},
		{"file.txt", &os.PathError{Op: "open", Path: "x", Err: unix.ELOOP}, true},
		{"dirlink_in", unix.ENOTDIR, true}, // a link where a directory was opened
		{"file.txt", unix.ENOTDIR, false},  // a file where a directory was opened
		{"missing", unix.ENOTDIR, false},   // gone since
		{"dirlink_in", unix.EACCES, false}, // only the link errors count
		{"dirlink_in", unix.ENOENT, false},
	}
	for _, tc := range tests {
		if got := IsSymlinkErr(dfd, tc.name, tc.err); got != tc.want {
			t.Errorf("IsSymlinkErr(%q, %v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// TestOpenBeneathAllocs keeps the walker's per-entry cost at what the system call
// needs: the name's C string and nothing else.
func TestOpenBeneathAllocs(t *testing.T) {
	root := newTree(t)
	dfd, err := unix.Open(root+"/base", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(dfd)
	for _, walk := range []bool{false, true} {
		ForceFallback(walk)
		allocs := testing.AllocsPerRun(100, func() {
			fd, err := OpenBeneath(dfd, "file.txt", unix.O_RDONLY|unix.O_NOFOLLOW)
			if err != nil {
				t.Fatal(err)
			}
			unix.Close(fd)
		})
		ForceFallback(false)
		if allocs > 1 {
			t.Errorf("walk=%v: %v allocations per open, want at most 1", walk, allocs)
		}
	}
}

// OpenEntry opens an entry as OpenBeneath does, with and without openat2: a file,
// never a link, never a malformed name, and without allocating.
func TestOpenEntry(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		if !fallback && !Openat2Available() {
			continue
		}
		ForceFallback(fallback)
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("f", filepath.Join(dir, "l")); err != nil {
			t.Fatal(err)
		}
		dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		fd, err := OpenEntry(dfd, []byte("f\x00"), unix.O_RDONLY)
		if err != nil {
			t.Fatalf("fallback %v: %v", fallback, err)
		}
		unix.Close(fd)
		if fd, err := OpenEntry(dfd, []byte("l\x00"), unix.O_RDONLY); err == nil {
			unix.Close(fd)
			t.Errorf("fallback %v: a symbolic link was followed", fallback)
		}
		for _, bad := range []string{"f", "", "\x00"} {
			if fd, err := OpenEntry(dfd, []byte(bad), unix.O_RDONLY); err == nil {
				unix.Close(fd)
				t.Errorf("fallback %v: name %q taken", fallback, bad)
			}
		}
		name := []byte("f\x00")
		if n := testing.AllocsPerRun(10, func() {
			if fd, err := OpenEntry(dfd, name, unix.O_RDONLY); err == nil {
				unix.Close(fd)
			}
		}); n != 0 {
			t.Errorf("fallback %v: %.0f allocations per open, want none", fallback, n)
		}
		unix.Close(dfd)
	}
	ForceFallback(false)
}
