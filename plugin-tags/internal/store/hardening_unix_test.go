//go:build unix

package store

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/sdk/safefile"
)

// notRegular ends the refusal of something other than a regular file (safefile's
// wording, after the path and what is there).
var notRegular = ": " + safefile.ErrNotRegular.Error()

func perm(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// shortTempDir returns a directory with a short path, so a Unix socket fits in it.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "yt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// hostile puts something other than a regular file at path and returns the words the
// refusal must use.
var hostile = []struct {
	name string
	make func(t *testing.T, path string)
	says string
}{
	{"symlink to /dev/zero", func(t *testing.T, p string) {
		if err := os.Symlink("/dev/zero", p); err != nil {
			t.Fatal(err)
		}
	}, "is a symbolic link"},
	{"fifo", func(t *testing.T, p string) {
		if err := unix.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}, "is a named pipe (FIFO)"},
	{"directory", func(t *testing.T, p string) {
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}, "is a directory"},
	{"socket", func(t *testing.T, p string) {
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
	}, "is a socket"},
}

// TestHostileDataFile: a symlink, FIFO, directory or socket at tags.json makes every
// call fail at once with an error naming the path and what is there; nothing blocks
// and nothing is followed or replaced.
func TestHostileDataFile(t *testing.T) {
	for _, h := range hostile {
		t.Run(h.name, func(t *testing.T) {
			dir := shortTempDir(t)
			path := filepath.Join(dir, FileName)
			h.make(t, path)
			want := path + " " + h.says + notRegular
			done := make(chan struct{})
			go func() {
				defer close(done)
				s := Open(context.Background(), dir, nil)
				_, rerr := s.Read(context.Background(), nil, func(map[string]string) { t.Error("Read ran fn") })
				_, uerr := s.Update(context.Background(), nil, func(map[string]string) { t.Error("Update ran fn") })
				for _, err := range []error{rerr, uerr} {
					var u *UnreadableError
					if !errors.As(err, &u) || !errors.Is(err, safefile.ErrNotRegular) || err.Error() != want {
						t.Errorf("got %v, want UnreadableError %q", err, want)
					}
				}
			}()
			select {
			case <-done:
			case <-time.After(time.Second):
				t.Fatal("store calls did not return within 1 s")
			}
			fi, err := os.Lstat(path)
			if err != nil || fi.Mode().IsRegular() {
				t.Errorf("tags.json replaced: %v %v", fi, err)
			}
		})
	}
}

// TestHostileLockFile: the same at tags.json.lock: reads still answer, and a mutation
// keeps its change in memory only, with a PersistErr naming the lock file and what is
// there (no write without the lock).
func TestHostileLockFile(t *testing.T) {
	for _, h := range hostile {
		t.Run(h.name, func(t *testing.T) {
			dir := shortTempDir(t)
			path := filepath.Join(dir, FileName)
			if err := os.WriteFile(path, []byte(`{"a": "1"}`), 0o600); err != nil {
				t.Fatal(err)
			}
			h.make(t, path+LockSuffix)
			want := "lock: " + path + LockSuffix + " " + h.says + notRegular
			done := make(chan struct{})
			go func() {
				defer close(done)
				s := Open(context.Background(), dir, nil)
				if got := snapshotOf(t, s); !maps.Equal(got, map[string]string{"a": "1"}) {
					t.Errorf("read %v", got)
				}
				st := update(t, s, nil, "b", "2")
				if st.PersistErr == nil || st.PersistErr.Error() != want {
					t.Errorf("state %+v, want PersistErr %q", st, want)
				}
			}()
			select {
			case <-done:
			case <-time.After(time.Second):
				t.Fatal("store calls did not return within 1 s")
			}
			if b, _ := os.ReadFile(path); string(b) != `{"a": "1"}` {
				t.Errorf("tags.json written without the lock: %q", b)
			}
		})
	}
}

// TestSymlinkToSecret: a tags.json symlink to a file only root may read used to be
// followed and its content answered as tags. It is refused, its target is left alone,
// and the error does not carry the content.
func TestSymlinkToSecret(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(secret, []byte(`{"password": "hunter2"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	if err := os.Symlink(secret, path); err != nil {
		t.Fatal(err)
	}
	s := Open(context.Background(), dir, nil)
	var seen map[string]string
	_, err := s.Read(context.Background(), nil, func(m map[string]string) { seen = m })
	if want := path + " is a symbolic link" + notRegular; err == nil || err.Error() != want || seen != nil {
		t.Errorf("Read = %v (saw %v), want %q", err, seen, want)
	}
	if _, err := s.Update(context.Background(), nil, func(m map[string]string) { m["x"] = "y" }); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Update = %v", err)
	}
	if b, _ := os.ReadFile(secret); string(b) != `{"password": "hunter2"}` || perm(t, secret) != 0o600 {
		t.Errorf("secret changed: %q", b)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("symlink replaced: %v", err)
	}
}

// TestLockSymlinkNotFollowed: a tags.json.lock symlink used to make the store create
// (as root) the file it points at, or open and lock a file elsewhere.
func TestLockSymlinkNotFollowed(t *testing.T) {
	for _, c := range []struct {
		name   string
		exists bool
	}{{"dangling", false}, {"to a file", true}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			victim := filepath.Join(t.TempDir(), "victim")
			if c.exists {
				if err := os.WriteFile(victim, []byte("victim"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			lockPath := filepath.Join(dir, FileName+LockSuffix)
			if err := os.Symlink(victim, lockPath); err != nil {
				t.Fatal(err)
			}
			s := Open(context.Background(), dir, nil)
			st := update(t, s, nil, "a", "1")
			if want := "lock: " + lockPath + " is a symbolic link" + notRegular; st.PersistErr == nil || st.PersistErr.Error() != want {
				t.Errorf("state %+v, want PersistErr %q", st, want)
			}
			fi, err := os.Lstat(victim)
			switch {
			case !c.exists && !errors.Is(err, fs.ErrNotExist):
				t.Errorf("symlink target created: %v", err)
			case c.exists && (err != nil || fi.Mode().Perm() != 0o644):
				t.Errorf("symlink target changed: %v %v", fi, err)
			}
			if got := names(t, dir); !slices.Equal(got, []string{FileName + LockSuffix}) {
				t.Errorf("data dir holds %v", got)
			}
		})
	}
}

// TestHardLinks: a tags.json or lock file with another hard link is refused (our
// writes always leave one link), and the lock file's other name is not chmod'ed.
func TestHardLinks(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(t.TempDir(), "other")
	if err := os.WriteFile(other, []byte(`{"x": "y"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	if err := os.Link(other, path); err != nil {
		t.Fatal(err)
	}
	s := Open(context.Background(), dir, nil)
	if _, err := s.Read(context.Background(), nil, func(map[string]string) {}); err == nil || err.Error() != path+" has 2 hard links, not 1" {
		t.Errorf("Read = %v", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(other, path+LockSuffix); err != nil {
		t.Fatal(err)
	}
	st := update(t, s, nil, "a", "1")
	if want := "lock: " + path + LockSuffix + " has 2 hard links, not 1"; st.PersistErr == nil || st.PersistErr.Error() != want {
		t.Errorf("state %+v, want PersistErr %q", st, want)
	}
	if got := perm(t, other); got != 0o644 {
		t.Errorf("hard-linked file's mode changed to %v", got)
	}
}

// TestForeignOwner: files of another user are refused (as root: chown needs it).
func TestForeignOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root, to give files to another user")
	}
	const nobody = 65534
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, []byte(`{"a": "1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(path, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	s := Open(context.Background(), dir, nil)
	want := path + " is owned by uid 65534, not by this process's uid 0"
	if _, err := s.Read(context.Background(), nil, func(map[string]string) {}); err == nil || err.Error() != want {
		t.Errorf("Read = %v, want %q", err, want)
	}
	if err := os.Lchown(path, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+LockSuffix, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(path+LockSuffix, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	st := update(t, s, nil, "b", "2")
	if want := "lock: " + path + LockSuffix + " is owned by uid 65534, not by this process's uid 0"; st.PersistErr == nil || st.PersistErr.Error() != want {
		t.Errorf("state %+v, want PersistErr %q", st, want)
	}
	if b, _ := os.ReadFile(path); string(b) != `{"a": "1"}` {
		t.Errorf("tags.json written without the lock: %q", b)
	}
}

// TestCreatedModes: the data dir (and its missing parents) is created 0700, tags.json
// and the lock file 0600, whatever the umask; an older tags.json or lock file of wider
// mode is narrowed to 0600. The umask is process-wide: this test must not run in
// parallel.
func TestCreatedModes(t *testing.T) {
	for _, umask := range []int{0o000, 0o022, 0o077} {
		func() {
			defer unix.Umask(unix.Umask(umask))
			base := t.TempDir()
			dir := filepath.Join(base, "a", "data")
			s := Open(context.Background(), dir, nil)
			set(t, s, "k", "v")
			for p, want := range map[string]fs.FileMode{
				filepath.Join(base, "a"):                0o700,
				dir:                                     0o700,
				filepath.Join(dir, FileName):            0o600,
				filepath.Join(dir, FileName+LockSuffix): 0o600,
			} {
				if got := perm(t, p); got != want {
					t.Errorf("umask %03o: %s mode %v, want %v", umask, p, got, want)
				}
			}
		}()
	}
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	for _, p := range []string{path, path + LockSuffix} {
		if err := os.WriteFile(p, []byte("{}"), 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	set(t, Open(context.Background(), dir, nil), "k", "v")
	for _, p := range []string{path, path + LockSuffix} {
		if got := perm(t, p); got != 0o600 {
			t.Errorf("existing %s: mode %v after a write, want 0600", p, got)
		}
	}
}

// TestStaleTempsRemovedAtOpen: temp files a crashed write left (exactly
// tags.json.tmp.<16 lowercase hex>, regular files or symlinks) are removed at Open,
// each removal logged; a symlink's target, other names and other kinds stay. A clean
// data dir gets no lock file from Open.
func TestStaleTempsRemovedAtOpen(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("victim"), 0o644); err != nil {
		t.Fatal(err)
	}
	Open(context.Background(), dir, nil)
	if got := names(t, dir); len(got) != 0 {
		t.Fatalf("Open of an empty dir created %v", got)
	}
	file := filepath.Join(dir, "tags.json.tmp.0123456789abcdef")
	link := filepath.Join(dir, "tags.json.tmp.abcdefabcdef0000")
	if err := os.WriteFile(file, []byte(`{"half": "writ`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	kept := []string{"tags.json.tmp.0123456789ABCDEF", "tags.json.tmp.0123", "tags.json.tmp.0123456789abcdef0", "tags.json.tmp.x123456789abcdef"}
	for _, n := range kept {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "tags.json.tmp.1111111111111111"), 0o700); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, "tags.json.tmp.1111111111111111")

	// While another process holds the lock (a write may be in progress), nothing
	// is removed.
	held, err := acquireLock(context.Background(), filepath.Join(dir, FileName+LockSuffix))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	var lb logBuffer
	Open(ctx, dir, lb.logger())
	cancel()
	held.release()
	if _, err := os.Lstat(file); err != nil {
		t.Errorf("temp removed without the lock: %v", err)
	}
	if lines := lb.lines(t); len(lines) != 1 || !strings.Contains(lines[0]["@message"].(string), "not removed") {
		t.Errorf("log %v, want one line saying the leftovers were not removed", lines)
	}

	// Open without a logger (as at configure): the removals are logged by the first
	// call that has one.
	s := Open(context.Background(), dir, nil)
	var after logBuffer
	read(t, s, after.logger())
	got := names(t, dir)
	want := append(slices.Clone(kept), FileName+LockSuffix)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("dir holds %v\nwant %v", got, want)
	}
	if b, _ := os.ReadFile(victim); string(b) != "victim" {
		t.Errorf("symlink target changed")
	}
	var logged []string
	for _, l := range after.lines(t) {
		logged = append(logged, l["path"].(string))
		if msg := l["@message"].(string); !strings.Contains(msg, l["path"].(string)) {
			t.Errorf("log message %q does not name the file", msg)
		}
	}
	slices.Sort(logged)
	if wantLogged := []string{file, link}; !slices.Equal(logged, wantLogged) {
		t.Errorf("logged removals %v, want %v", logged, wantLogged)
	}
}
