//go:build linux || windows

// Helpers for the Linux and Windows tests; elsewhere only name_test.go runs, which
// needs none.

package atomicfile

import (
	"os"
	"strings"
	"testing"
)

// noTempSiblings fails if any `<name>.tmp.` file is left in dir.
func noTempSiblings(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp.") {
			t.Errorf("temp file %s left behind in %s", e.Name(), dir)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
