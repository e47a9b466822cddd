//go:build unix

package safefile

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Every kind of file someone could plant where a small regular file belongs is refused
// at once, by name, and never blocks or reads without bound.
func TestOpenRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, []byte("ok"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cases := []struct {
		path, want string
	}{
		{fifo, "is a named pipe (FIFO)"},
		{zero, "is a symbolic link"},
		{link, "is a symbolic link"},
		{dir, "is a directory"},
		{sock, "is a socket"},
		{"/dev/null", "is a device"},
	}
	for _, c := range cases {
		start := time.Now()
		_, err := ReadFile(c.path, 1<<20)
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), c.path+" "+c.want) {
			t.Errorf("ReadFile(%s) = %v, want ErrNotRegular saying %q", c.path, err, c.want)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("ReadFile(%s) took %s", c.path, took)
		}
	}
	if data, err := ReadFile(regular, 2); err != nil || string(data) != "ok" {
		t.Errorf("ReadFile(regular) = %q, %v", data, err)
	}
	if _, err := ReadFile(regular, 1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFile over the bound = %v, want ErrTooLarge", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), 1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(missing) = %v, want fs.ErrNotExist", err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 200<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadFile(big, 200<<10); err != nil || len(data) != 200<<10 {
		t.Errorf("ReadFile at the bound: %d bytes, %v", len(data), err)
	}
}

func TestTrusted(t *testing.T) {
	dir := t.TempDir()
	check := func(mode fs.FileMode, sticky bool) error {
		t.Helper()
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		return Trusted(fi, sticky)
	}
	if err := check(0o755, false); err != nil {
		t.Errorf("0755: %v", err)
	}
	if err := check(0o775, false); err == nil || !strings.Contains(err.Error(), "group- or world-writable (mode 0775)") {
		t.Errorf("0775: %v", err)
	}
	if err := check(0o777|fs.ModeSticky, true); err != nil {
		t.Errorf("sticky 1777 allowed as a parent: %v", err)
	}
	if err := check(0o777|fs.ModeSticky, false); err == nil {
		t.Error("sticky 1777 accepted where sticky is not allowed")
	}
	if os.Geteuid() == 0 {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(dir)
		if err := Trusted(fi, false); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("a directory of uid 65534: %v", err)
		}
	}
}

// TrustedDir looks at the directory (through links) and at every parent: a writable
// directory or a writable parent is refused, a sticky writable parent is not.
func TestTrustedDir(t *testing.T) {
	root := t.TempDir()
	mk := func(name string, mode os.FileMode) string {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := mk("good", 0o755)
	open := mk("open", 0o777)
	under := mk("open/inner", 0o700)
	mk("sticky", 0o777|os.ModeSticky)
	inSticky := mk("sticky/inner", 0o700)
	link := filepath.Join(root, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ dir, want string }{
		{good, ""},
		{link, ""},
		{inSticky, ""},
		{open, open + " refused: group- or world-writable (mode 0777)"},
		{under, under + " refused: its parent " + open + " is group- or world-writable (mode 0777)"},
		{file, file + " is not a directory"},
		{filepath.Join(root, "missing"), filepath.Join(root, "missing") + ": "},
	}
	for _, c := range cases {
		err := TrustedDir(c.dir)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("TrustedDir(%s) = %v, want nil", c.dir, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("TrustedDir(%s) = %v, want an error starting %q", c.dir, err, c.want)
		}
	}
}

// TestPrivate: a file only its owner may read is private; group or world read is
// named with the mode.
func TestPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode os.FileMode
		want string
	}{{0o600, ""}, {0o400, ""}, {0o640, "readable by group or others (mode 0640)"}, {0o604, "(mode 0604)"}} {
		if err := os.Chmod(path, c.mode); err != nil {
			t.Fatal(err)
		}
		f, fi, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		err = Private(f, fi)
		f.Close()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("mode %04o: %v, want %q", c.mode, err, c.want)
		}
	}
}
