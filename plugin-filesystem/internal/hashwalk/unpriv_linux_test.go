package hashwalk

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Permission bits do not stop root, so the unreadable cases run in a copy of
// this test binary started as the unprivileged user nobody (65534).

const (
	unprivEnv = "HASHWALK_UNPRIV_DIR"
	nobody    = 65534
)

var unprivTarget = []byte("visible match")

// buildUnreadableTree lays out, below dir:
//
//	tree/open/f          readable, matches
//	tree/locked/         mode 000
//	tree/locked/f        matches, behind the locked directory
//	tree/secret          mode 000 file, matches
//	tree/noexec/         mode 0644: listable, but its files cannot be opened
//	tree/noexec/f        matches
//	closed/              mode 000, used as a root
func buildUnreadableTree(t *testing.T, dir string) {
	tree := filepath.Join(dir, "tree")
	writeFile(t, filepath.Join(tree, "open", "f"), unprivTarget)
	writeFile(t, filepath.Join(tree, "locked", "f"), unprivTarget)
	writeFile(t, filepath.Join(tree, "secret"), unprivTarget)
	writeFile(t, filepath.Join(tree, "noexec", "f"), unprivTarget)
	mkdir(t, filepath.Join(dir, "closed"))
	for p, mode := range map[string]os.FileMode{
		filepath.Join(tree, "locked"): 0,
		filepath.Join(tree, "secret"): 0,
		filepath.Join(tree, "noexec"): 0o644,
		filepath.Join(dir, "closed"):  0,
	} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// checkUnreadableTree is the assertion half, run by the unprivileged process.
func checkUnreadableTree(t *testing.T, dir string) {
	bothOpenModes(t, func(t *testing.T) {
		tree := filepath.Join(dir, "tree")
		r := mustWalk(t, context.Background(), request(tree, hexSHA(unprivTarget)))
		want := Counters{Visited: 6, Hashed: int64(len(unprivTarget)), SkippedUnreadable: 3}
		if r.Counters != want {
			t.Fatalf("got %+v, want %+v", r.Counters, want)
		}
		if got := matchPaths(r); len(got) != 1 || got[0] != tree+"/open/f" {
			t.Fatalf("matches %q", got)
		}
		if StatusOf(r).Provenance != "filesystem:skipped_unreadable" {
			t.Fatalf("status %+v", StatusOf(r))
		}

		r = mustWalk(t, context.Background(), request(filepath.Join(dir, "closed"), emptySHA))
		if r.Counters != (Counters{SkippedUnreadable: 1}) || r.Reason != ReasonNone {
			t.Fatalf("unlistable root: %+v", r)
		}
		if got := rowText(Rows(r)); !strings.HasPrefix(got, "truncated|none|visited=0|hashed=0|skipped_unreadable=1|") {
			t.Fatalf("rows %q", got)
		}
	})
}

func TestWalkUnreadable(t *testing.T) {
	// Re-run as the unprivileged user (below), this same test checks the tree the
	// root run built.
	if dir := os.Getenv(unprivEnv); dir != "" {
		if os.Geteuid() == 0 {
			t.Fatal("the unprivileged run runs as root, where permissions deny nothing")
		}
		checkUnreadableTree(t, dir)
		return
	}
	dir, err := os.MkdirTemp("", "hashwalk-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Give write and search bits back so the removal can recurse.
		filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error {
			os.Chmod(p, 0o755)
			return nil
		})
		os.RemoveAll(dir)
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err = filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	buildUnreadableTree(t, dir)

	if os.Geteuid() != 0 {
		checkUnreadableTree(t, dir)
		return
	}

	// Root: copy the test binary where nobody can execute it and run the
	// checks there.
	self, err := os.Executable()
	if err != nil {
		t.Skipf("cannot find the test binary to re-run unprivileged: %v", err)
	}
	bin := filepath.Join(dir, "hashwalk.test")
	if err := copyExecutable(self, bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestWalkUnreadable$", "-test.v", "-test.count=1", "-test.timeout=120s")
	cmd.Env = append(os.Environ(), unprivEnv+"="+dir)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Skipf("cannot start a process as uid %d, so chmod cannot deny anything here: %v", nobody, err)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestWalkUnreadable") {
		t.Fatalf("unprivileged run failed (%v):\n%s", err, out)
	}
	t.Logf("unprivileged run as uid %d passed", nobody)
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
