package parse

import (
	"os"
	"path/filepath"
	"testing"
)

// readTestdata returns a file from testdata/ or fails the test.
func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// seedTestdata adds every testdata file, the real captures included, to a fuzz
// corpus, so the fuzzers start from real tool output.
func seedTestdata(f *testing.F) {
	f.Helper()
	for _, dir := range []string{"testdata", filepath.Join("testdata", "captures")} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			f.Fatal(err)
		}
		for _, e := range entries {
			if e.Type().IsRegular() && filepath.Ext(e.Name()) == ".txt" {
				b, err := os.ReadFile(filepath.Join(dir, e.Name()))
				if err != nil {
					f.Fatal(err)
				}
				f.Add(b)
			}
		}
	}
}
