package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/sdktest"

	"github.com/yuzugo/yuzu/plugin-tags/internal/store"
)

// TestStoreFull: a set that would make tags.json larger than the 16 MiB the store
// reads back is refused, and the store stays usable. Before, the set answered rc 0
// and wrote a file every later action, delete and clear included, refused to read.
func TestStoreFull(t *testing.T) {
	if testing.Short() {
		t.Skip("-short (the Windows leg, under Wine): a 16 MiB store is read, parsed and refused several times; " +
			"the bound is the same code on every system and runs in full on Linux, and internal/store's TestFull " +
			"and TestTooLarge check it on a small scale under -short")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "tags.json")
	// {\n  "big": "<value>"\n} is 14 bytes plus the value: 10 bytes under the bound.
	content := []byte("{\n  \"big\": \"" + strings.Repeat("x", store.MaxFileBytes-24) + "\"\n}")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	h := sdktest.New(t, newPlugin(), sdk.Config{DataDir: dir})
	const full = "error|tags store full: the change would make tags.json larger than 16777216 bytes\n" + undeclared + rc1
	runSteps(t, h, []step{
		{"count", nil, "count|1\n" + undeclared},
		// `,\n  "k": "v"` adds 12 bytes.
		{"set", kv("key", "k", "value", "v"), full},
		{"count", nil, "count|1\n" + undeclared},
		{"check", kv("key", "k"), "tag_exists|k|false\n" + undeclared},
	})
	if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, content) {
		t.Errorf("tags.json changed by a refused set (%d bytes, %v)", len(b), err)
	}
	runSteps(t, h, []step{
		{"delete", kv("key", "big"), "tag_deleted|big|true\n" + undeclared},
		{"set", kv("key", "k", "value", "v"), "tag_set|k|v\n" + undeclared},
		{"get_all", nil, "tag|k|v\ncount|1\n" + undeclared},
	})
}

// TestCorruptFoundByWrite: a set that finds a corrupt (here truncated) tags.json and
// writes successfully answers load_failed, and so does every action until the next
// successful write. Before, it answered OK and the other tags were gone unannounced.
func TestCorruptFoundByWrite(t *testing.T) {
	t.Run("truncated while running", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "tags.json")
		h := sdktest.New(t, newPlugin(), sdk.Config{DataDir: dir})
		runSteps(t, h, []step{
			{"set", kv("key", "role", "value", "web"), "tag_set|role|web\n" + undeclared},
			{"set", kv("key", "env", "value", "prod"), "tag_set|env|prod\n" + undeclared},
		})
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b[:len(b)-5], 0o600); err != nil {
			t.Fatal(err)
		}
		runSteps(t, h, []step{
			{"set", kv("key", "zone", "value", "eu"), "tag_set|zone|eu\n" + loadFailed},
			{"get_all", nil, "tag|zone|eu\ncount|1\n" + loadFailed},
			{"delete", kv("key", "x"), "tag_deleted|x|false\n" + undeclared},
			{"count", nil, "count|1\n" + undeclared},
		})
		if moved, _ := filepath.Glob(path + ".corrupt-*"); len(moved) != 1 || readFile(t, moved[0]) != string(b[:len(b)-5]) {
			t.Errorf("moved aside: %v", moved)
		}
	})
	t.Run("found at configure, first action a set", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "tags.json"), []byte(`{"role": "web", "env"`), 0o600); err != nil {
			t.Fatal(err)
		}
		h := sdktest.New(t, newPlugin(), sdk.Config{DataDir: dir})
		runSteps(t, h, []step{
			{"set", kv("key", "zone", "value", "eu"), "tag_set|zone|eu\n" + loadFailed},
			{"check", kv("key", "role"), "tag_exists|role|false\n" + loadFailed},
			{"set", kv("key", "role", "value", "web"), "tag_set|role|web\n" + undeclared},
			{"count", nil, "count|2\n" + undeclared},
		})
	})
}
