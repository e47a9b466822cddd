package proc

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// TestSweepSocketRoots: a dead agent's socket directory goes, a live one's and
// anything else stay.
func TestSweepSocketRoots(t *testing.T) {
	parent := t.TempDir()
	dead := filepath.Join(parent, socketRootPrefix+"999999999-1")
	live := filepath.Join(parent, socketRootPrefix+strconv.Itoa(os.Getppid())+"-2")
	mine := filepath.Join(parent, socketRootPrefix+strconv.Itoa(os.Getpid())+"-3")
	other := filepath.Join(parent, "plugin-dir123")
	for _, d := range []string{dead, live, mine, other} {
		if err := os.MkdirAll(filepath.Join(d, "plugin-dir1"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sweepSocketRoots(parent, hclog.NewNullLogger())
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("a dead agent's directory stayed: %v", err)
	}
	for _, d := range []string{live, mine, other} {
		if d == live && runtime.GOOS == "windows" && !processAlive(os.Getppid()) {
			continue // the test runner's parent may be gone under Wine
		}
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s went: %v", d, err)
		}
	}
	// A child's directory is removed only inside the root.
	RemoveSocketDir(live, filepath.Join(live, "plugin-dir1"))
	RemoveSocketDir(live, filepath.Join(other, "plugin-dir1"))
	if _, err := os.Stat(filepath.Join(live, "plugin-dir1")); !os.IsNotExist(err) {
		t.Errorf("the child's directory stayed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(other, "plugin-dir1")); err != nil {
		t.Errorf("a directory outside the root went: %v", err)
	}
}
