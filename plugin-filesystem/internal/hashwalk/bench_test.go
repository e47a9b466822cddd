package hashwalk

import (
	"context"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/mounts"
)

// BenchmarkWalk hashes a tree of 512 files of 128 KiB, or the tree named by
// HASHWALK_BENCH_DIR (for example the one bench/find_by_hash.sh builds).
func BenchmarkWalk(b *testing.B) {
	root := os.Getenv("HASHWALK_BENCH_DIR")
	if root == "" {
		root = b.TempDir()
		var seed [32]byte
		src := rand.NewChaCha8(seed)
		data := make([]byte, 128<<10)
		for i := range 512 {
			src.Read(data)
			p := filepath.Join(root, string(rune('a'+i%16)), "f"+string(rune('a'+i/16%26))+string(rune('a'+i/416)))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	root, err := filepath.EvalSymlinks(root)
	if err != nil {
		b.Fatal(err)
	}
	var total int64
	filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				total += fi.Size()
			}
		}
		return nil
	})
	tab, err := mounts.Load()
	if err != nil {
		b.Logf("no mount table: %v", err)
	}
	req := Request{Root: root, SHA256: "00", MaxDepth: 10, Mounts: tab, Bounds: DefaultBounds()}
	b.SetBytes(total)
	b.ResetTimer()
	for b.Loop() {
		r, err := Walk(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if r.Hashed != total || r.Reason != ReasonNone {
			b.Fatalf("walk hashed %d of %d bytes, reason %s", r.Hashed, total, r.Reason)
		}
	}
}
