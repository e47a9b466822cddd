package pathcheck

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nobody is the unprivileged user the trust tests give directories and links to.
const nobody = 65534

// trustTree lays out, in a fresh root-owned directory, what OpenBase and OpenDir must
// judge ("@" is that directory, every entry root's 0755 unless said otherwise):
//
//	@/ok/base                       @/ok/link -> base         @/ok/file
//	@/ok/gw (0775)                  @/u (nobody's)            @/u/base (nobody's)
//	@/u/rootdir (root's)            @/u/link -> ../ok/base (nobody's)
//	@/sticky (1777)                 @/sticky/mine (root's)    @/sticky/theirs (nobody's)
//	@/sticky/mylink -> mine (root's)  @/sticky/theirlink -> mine (nobody's)
//	@/ok/uplink -> ../u/base        @/ok/dotdot -> base/..
func trustTree(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root to give files to uid %d (running as uid %d)", nobody, os.Geteuid())
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	must(t, os.Chmod(root, 0o755))
	mk := func(p string, mode os.FileMode, uid int) {
		must(t, os.Mkdir(filepath.Join(root, p), mode))
		must(t, os.Chmod(filepath.Join(root, p), mode))
		must(t, os.Lchown(filepath.Join(root, p), uid, uid))
	}
	ln := func(target, p string, uid int) {
		must(t, os.Symlink(target, filepath.Join(root, p)))
		must(t, os.Lchown(filepath.Join(root, p), uid, uid))
	}
	mk("ok", 0o755, 0)
	mk("ok/base", 0o755, 0)
	mk("ok/gw", 0o775, 0)
	must(t, os.WriteFile(filepath.Join(root, "ok/file"), nil, 0o644))
	ln("base", "ok/link", 0)
	ln("../u/base", "ok/uplink", 0)
	ln("base/..", "ok/dotdot", 0)
	mk("u", 0o755, nobody)
	mk("u/base", 0o755, nobody)
	mk("u/rootdir", 0o755, 0)
	ln("../ok/base", "u/link", nobody)
	mk("sticky", os.ModeSticky|0o777, 0)
	mk("sticky/mine", 0o755, 0)
	mk("sticky/theirs", 0o755, nobody)
	ln("mine", "sticky/mylink", 0)
	ln("mine", "sticky/theirlink", nobody)
	return root
}

func TestOpenBaseTrust(t *testing.T) {
	root := trustTree(t)
	tests := []struct {
		raw  string
		want string // canonical path, or the start of the refusal
		err  error
	}{
		{"@/ok/base", "@/ok/base", nil},
		{"@/ok/link", "@/ok/base", nil},
		{"@/ok/dotdot", "@/ok", nil},
		{"@/ok/link/../base", "@/ok/base", nil}, // ".." after a link climbs out of its target
		{"@/sticky/mine", "@/sticky/mine", nil},
		{"@/sticky/mylink", "@/sticky/mine", nil},
		{"@/u/base", "@/u is owned by uid 65534", ErrUntrusted},
		{"@/u/rootdir", "@/u is owned by uid 65534", ErrUntrusted},
		{"@/u/link", "@/u is owned by uid 65534", ErrUntrusted},
		{"@/ok/uplink", "@/u is owned by uid 65534", ErrUntrusted},
		{"@/ok/gw", "@/ok/gw is group- or world-writable (mode 0775)", ErrUntrusted},
		{"@/sticky", "@/sticky is group- or world-writable (mode 0777)", ErrUntrusted}, // sticky, but the base itself
		{"@/sticky/theirs", "@/sticky/theirs is owned by uid 65534", ErrUntrusted},
		{"@/sticky/theirlink", "@/sticky/theirlink is a symbolic link owned by uid 65534", ErrUntrusted},
		{"@/ok/file", "", ErrNotDir},
		{"@/ok/missing", "", ErrBaseDir},
		{"@/ok/file/x", "", ErrBaseDir},
	}
	at := func(s string) string { return strings.ReplaceAll(s, "@", root) }
	for _, tc := range tests {
		b, err := OpenBase(at(tc.raw))
		if tc.err == nil {
			if err != nil || b.Path() != at(tc.want) {
				t.Errorf("OpenBase(%s) = %q, %v; want %q", tc.raw, b.Path(), err, tc.want)
			}
			if b != nil {
				fi, err := b.File().Stat()
				want, _ := os.Stat(at(tc.want))
				if err != nil || !os.SameFile(fi, want) {
					t.Errorf("OpenBase(%s) holds another directory than %s", tc.raw, tc.want)
				}
			}
			b.Close()
			continue
		}
		if b != nil {
			b.Close()
		}
		if !errors.Is(err, tc.err) || !strings.HasPrefix(errText(err), at(tc.want)) {
			t.Errorf("OpenBase(%s): %v; want %v starting %q", tc.raw, err, tc.err, at(tc.want))
		}
	}
}

// errText is what the plugin prints of a refusal: an UntrustedError's own text.
func errText(err error) string {
	var ue *UntrustedError
	if errors.As(err, &ue) {
		return ue.Error()
	}
	return ""
}

// OpenDir lets the directory and its parents belong to anyone, but follows a link
// only before the name has passed through a directory another user can change.
func TestOpenDirTrust(t *testing.T) {
	root := trustTree(t)
	tests := []struct {
		raw, want string
		err       error
	}{
		{"@/u/base", "@/u/base", nil},
		{"@/u/rootdir", "@/u/rootdir", nil},
		{"@/sticky", "@/sticky", nil},
		{"@/sticky/theirs", "@/sticky/theirs", nil},
		{"@/ok/link", "@/ok/base", nil},
		{"@/sticky/mylink", "@/sticky/mine", nil},
		{"@/u/link", "@/u/link is a symbolic link below @/u, which is owned by uid 65534", ErrUntrusted},
		{"@/ok/uplink/../rootdir", "@/u/rootdir", nil}, // no link after u
		{"@/sticky/theirlink", "@/sticky/theirlink is a symbolic link owned by uid 65534", ErrUntrusted},
		{"@/ok/file", "", ErrNotDir},
		{"@/ok/missing", "", ErrNotExist},
	}
	at := func(s string) string { return strings.ReplaceAll(s, "@", root) }
	for _, tc := range tests {
		b, err := OpenDir(at(tc.raw))
		if tc.err == nil {
			if err != nil || b.Path() != at(tc.want) {
				t.Errorf("OpenDir(%s) = %q, %v; want %q", tc.raw, b.Path(), err, tc.want)
			}
			b.Close()
			continue
		}
		if b != nil {
			b.Close()
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("OpenDir(%s): %v; want %v", tc.raw, err, tc.err)
		}
		if tc.err == ErrUntrusted && tc.raw != tc.want && !strings.HasPrefix(errText(err), at(tc.want)) {
			t.Errorf("OpenDir(%s): %q; want it to start %q", tc.raw, errText(err), at(tc.want))
		}
	}
}

// Stat looks beneath the held base without following a link: a directory swapped
// for a link since the path was validated is refused, not described.
func TestStatBeneathBase(t *testing.T) {
	root := newTree(t)
	base := root + "/base"
	b := openBase(t, base)
	p := mustValidate(t, base+"/sub/inner.txt", b)
	if fi, err := Stat(b, p); err != nil || fi.Size() != int64(len("inner\n")) {
		t.Fatalf("Stat(%s) = %v, %v", p, fi, err)
	}
	must(t, os.Rename(base+"/sub", base+"/sub_real"))
	must(t, os.Symlink("../outside", base+"/sub"))
	must(t, os.WriteFile(root+"/outside/inner.txt", []byte("a much longer secret\n"), 0o644))
	for _, walk := range []bool{false, true} {
		ForceFallback(walk)
		fi, err := Stat(b, p)
		ForceFallback(false)
		if !errors.Is(err, ErrSymlink) {
			t.Errorf("walk=%v: Stat through a swapped link = %v, %v; want ErrSymlink", walk, fi, err)
		}
	}
	if _, err := Stat(b, root+"/outside/inner.txt"); !errors.Is(err, ErrOutside) {
		t.Errorf("Stat outside the base: %v", err)
	}
}
