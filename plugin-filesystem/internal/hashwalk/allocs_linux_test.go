package hashwalk

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// TestWalkAllocationsPerFile: the walk's memory does not grow with the files
// it hashes. Two trees with the same directories and 5x the files are walked,
// and the extra allocations per extra file are bounded (the one left is the
// none: the walk opens each file through pathcheck.OpenEntry, from a NUL-terminated
// name in its own buffer, where golang.org/x/sys used to copy every name).
func TestWalkAllocationsPerFile(t *testing.T) {
	allocs := func(files int) float64 {
		root := canonTemp(t)
		for i := range files {
			writeFile(t, filepath.Join(root, fmt.Sprintf("d%d", i%4), fmt.Sprintf("f%05d", i)), []byte("x"))
		}
		req := request(root, emptySHA)
		return testing.AllocsPerRun(3, func() {
			if r, err := Walk(context.Background(), req); err != nil || r.Hashed != int64(files) {
				t.Fatalf("walk: %+v %v", r, err)
			}
		})
	}
	small, large := allocs(200), allocs(1000)
	perFile := (large - small) / 800
	t.Logf("allocations: %.0f for 200 files, %.0f for 1000: %.2f per extra file", small, large, perFile)
	if perFile > 0.1 {
		t.Fatalf("%.2f allocations per file, want none", perFile)
	}
}
