//go:build unix

package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestModeAndInode: tags.json gets mode 0600 whatever the umask (upstream gave it 0666
// minus the umask; tags steer targeting, so other users may not read or change them);
// each save gives a new inode, and a reader holding the old file still reads the whole
// old content, with a link count of 0.
func TestModeAndInode(t *testing.T) {
	// The umask is process-wide: this test must not run in parallel.
	old := unix.Umask(0o022)
	unix.Umask(old)
	dir := t.TempDir()
	s := Open(context.Background(), dir, nil)
	set(t, s, "a", "1")
	path := filepath.Join(dir, FileName)
	var st1 unix.Stat_t
	if err := unix.Stat(path, &st1); err != nil {
		t.Fatal(err)
	}
	if got := uint32(st1.Mode) & 0o777; got != 0o600 {
		t.Errorf("mode %o, want 600 (umask %o)", got, old)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	set(t, s, "b", "2")
	var st2 unix.Stat_t
	if err := unix.Stat(path, &st2); err != nil {
		t.Fatal(err)
	}
	if st1.Ino == st2.Ino {
		t.Errorf("second save kept inode %d", st1.Ino)
	}
	var fst unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &fst); err != nil {
		t.Fatal(err)
	}
	if fst.Nlink != 0 {
		t.Errorf("old file link count %d, want 0", fst.Nlink)
	}
	b := make([]byte, 100)
	n, _ := f.Read(b)
	if got := string(b[:n]); !strings.Contains(got, `"a": "1"`) || strings.Contains(got, `"b"`) {
		t.Errorf("old descriptor reads %q", got)
	}
}
