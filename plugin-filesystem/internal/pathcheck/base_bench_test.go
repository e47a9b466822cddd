package pathcheck

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkOpenBase is what resolving and holding a base costs each command that
// passes base_dir, and BenchmarkValidateIn what one path's validation beneath it
// costs, for a base four levels below "/".
func BenchmarkOpenBase(b *testing.B) {
	base := benchBase(b)
	for b.Loop() {
		bb, err := OpenBase(base)
		if err != nil {
			b.Fatal(err)
		}
		bb.Close()
	}
}

func BenchmarkValidateIn(b *testing.B) {
	base := benchBase(b)
	bb, err := OpenBase(base)
	if err != nil {
		b.Fatal(err)
	}
	defer bb.Close()
	p := filepath.Join(base, "sub", "f.txt")
	for b.Loop() {
		if _, err := Validate(p, bb); err != nil {
			b.Fatal(err)
		}
	}
}

func benchBase(b *testing.B) string {
	b.Helper()
	base, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(base, "sub"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "sub", "f.txt"), []byte("x\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	return base
}
