package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/sdktest"
)

// BenchmarkBaseDir times whole commands through the SDK's in-process harness, with
// and without base_dir, on the actions base_dir costs most: read and file_hash of a
// small file (the base is resolved and held per command), and list_dir and
// search_dir over a tree (every directory opened beneath the held base). scripts or
// people comparing two builds run it on each and divide; nothing here judges time.
func BenchmarkBaseDir(b *testing.B) {
	base, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	file := filepath.Join(base, "d0", "f0.txt")
	for d := range 10 {
		dir := filepath.Join(base, fmt.Sprintf("d%d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 50 {
			body := strings.Repeat(fmt.Sprintf("line %d of file %d\n", f, d), 100)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", f)), []byte(body), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	h := sdktest.New(b, newPlugin(), sdk.Config{DataDir: b.TempDir()})
	cases := []struct {
		name   string
		action string
		params map[string]string
	}{
		{"read", "read", map[string]string{"path": file}},
		{"file_hash", "file_hash", map[string]string{"path": file}},
		{"list_dir", "list_dir", map[string]string{"path": filepath.Dir(file)}},
		{"search_dir", "search_dir", map[string]string{"root": base, "pattern": "*", "match_type": "both", "max_results": "1000"}},
	}
	for _, c := range cases {
		for _, withBase := range []bool{false, true} {
			p := map[string]string{}
			for k, v := range c.params {
				p[k] = v
			}
			name := c.name + "/no_base"
			if withBase {
				p["base_dir"] = base
				name = c.name + "/base_dir"
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					if o := h.Run(c.action, p); o.Result.Code != 0 {
						b.Fatalf("%s: %v", c.action, o.Rows)
					}
				}
			})
		}
	}
}
