package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/safefile"
	"github.com/yuzugo/yuzu/sdk/sdktest"
)

// Trailers of the capture format.
const (
	undeclared    = "[result_status] UNDECLARED / UNKNOWN\n"
	persistFailed = "[result_status] CONSTRAINED / PARTIAL / tags:persist_failed\n"
	loadFailed    = "[result_status] CONSTRAINED / PARTIAL / tags:load_failed\n"
	rc1           = "[rc] 1\n"
)

// notRegular ends the store's refusal of something other than a regular file, after
// the path and what is there (safefile's wording).
var notRegular = ": " + safefile.ErrNotRegular.Error()

// step is one command and the full capture text it must produce.
type step struct {
	action string
	params map[string]string
	want   string
}

func kv(pairs ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return m
}

// runSteps runs steps in order on h and compares each capture text.
func runSteps(t *testing.T, h *sdktest.Harness, steps []step) {
	t.Helper()
	for i, s := range steps {
		if got := h.Run(s.action, s.params).String(); got != s.want {
			t.Errorf("step %d: %s %v:\n got %q\nwant %q", i, s.action, s.params, got, s.want)
		}
	}
}

// readFile returns path's content, failing the test when it cannot be read.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// dirNames lists dir's entries, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func TestManifest(t *testing.T) {
	h := sdktest.New(t, newPlugin(), sdk.Config{})
	m := h.Manifest()
	if m.Name != "tags" || m.Version != "0.1.0" || m.Description != "Device tagging — set, get, delete, list tags for scope evaluation" {
		t.Errorf("identity: %q %q %q", m.Name, m.Version, m.Description)
	}
	want := []string{"set", "get", "get_all", "delete", "check", "clear", "count"}
	if len(m.Actions) != len(want) {
		t.Fatalf("actions: %+v", m.Actions)
	}
	leg := sdk.OSSupport{Level: sdk.SupportSupported, Rung: 1, Mechanism: "local_json_store"}
	for i, a := range m.Actions {
		if a.Name != want[i] {
			t.Errorf("action %d = %q, want %q", i, a.Name, want[i])
		}
		if a.Description == "" {
			t.Errorf("%s: no description", a.Name)
		}
		for os, got := range map[string]sdk.OSSupport{"linux": a.Linux, "darwin": a.Darwin, "windows": a.Windows} {
			if got != leg {
				t.Errorf("%s on %s: %+v, want %+v", a.Name, os, got, leg)
			}
		}
	}
}

// TestActions walks every action, its rows and its errors, on a store backed by a file.
func TestActions(t *testing.T) {
	dir := t.TempDir()
	h := sdktest.New(t, newPlugin(), sdk.Config{DataDir: dir})
	runSteps(t, h, []step{
		{"count", nil, "count|0\n" + undeclared},
		{"get_all", nil, "count|0\n" + undeclared},
		{"get", kv("key", "role"), "tag|role|\n" + undeclared},
		{"check", kv("key", "role"), "tag_exists|role|false\n" + undeclared},
		{"set", kv("key", "role", "value", "web"), "tag_set|role|web\n" + undeclared},
		{"set", kv("key", "env", "value", "prod"), "tag_set|env|prod\n" + undeclared},
		{"set", kv("key", "a.b:c-d_9"), "tag_set|a.b:c-d_9|\n" + undeclared},
		{"set", kv("key", "role", "value", "db"), "tag_set|role|db\n" + undeclared},
		{"get", kv("key", "role"), "tag|role|db\n" + undeclared},
		{"get", kv("key", "a.b:c-d_9"), "tag|a.b:c-d_9|\n" + undeclared},
		{"check", kv("key", "env"), "tag_exists|env|true\n" + undeclared},
		{"count", nil, "count|3\n" + undeclared},
		{"get_all", nil, "tag|a.b:c-d_9|\ntag|env|prod\ntag|role|db\ncount|3\n" + undeclared},
		{"delete", kv("key", "env"), "tag_deleted|env|true\n" + undeclared},
		{"delete", kv("key", "env"), "tag_deleted|env|false\n" + undeclared},
		{"check", kv("key", "env"), "tag_exists|env|false\n" + undeclared},
		{"clear", nil, "tags_cleared|2\n" + undeclared},
		{"clear", nil, "tags_cleared|0\n" + undeclared},
		{"get_all", nil, "count|0\n" + undeclared},
		{"reboot", nil, "unknown action: reboot\n" + undeclared + rc1},
	})
	if got := readFile(t, filepath.Join(dir, "tags.json")); got != "{}" {
		t.Errorf("tags.json after clear = %q, want {}", got)
	}
}

func TestMissingKey(t *testing.T) {
	h := sdktest.New(t, newPlugin(), sdk.Config{DataDir: t.TempDir()})
	const want = "error|missing required parameter: key\n" + undeclared + rc1
	var steps []step
	for _, action := range []string{"set", "get", "delete", "check"} {
		steps = append(steps,
			step{action, nil, want},
			step{action, kv("key", ""), want},
			step{action, kv("value", "v"), want},
		)
	}
	runSteps(t, h, steps)
}

// TestLimits checks the byte limits of set (multibyte characters count by their
// bytes) and the key rule we add (docs/tags.md).
func TestLimits(t *testing.T) {
	h := sdktest.New(t, newPlugin(), sdk.Config{DataDir: t.TempDir()})
	k64, k65 := strings.Repeat("k", 64), strings.Repeat("k", 65)
	v448, v449 := strings.Repeat("v", 448), strings.Repeat("v", 449)
	e224, e225 := strings.Repeat("é", 224), strings.Repeat("é", 225) // 448 and 450 bytes
	euro := strings.Repeat("€", 149) + "ab"                          // 449 bytes, 151 characters
	runSteps(t, h, []step{
		{"set", kv("key", k64, "value", "x"), "tag_set|" + k64 + "|x\n" + undeclared},
		{"set", kv("key", k65, "value", "x"), "error|key exceeds 64 characters\n" + undeclared + rc1},
		// 33 characters but 66 bytes: the limit counts bytes.
		{"set", kv("key", strings.Repeat("é", 33)), "error|key exceeds 64 characters\n" + undeclared + rc1},
		// Within the length limit but outside [a-zA-Z0-9_.:-].
		{"set", kv("key", strings.Repeat("é", 32)), "error|invalid key: " + strings.Repeat("é", 32) + "\n" + undeclared + rc1},
		{"set", kv("key", "has space"), "error|invalid key: has space\n" + undeclared + rc1},
		{"set", kv("key", "a/b"), "error|invalid key: a/b\n" + undeclared + rc1},
		// The length check comes first, as upstream's is the only one it has.
		{"set", kv("key", strings.Repeat("/", 65)), "error|key exceeds 64 characters\n" + undeclared + rc1},
		{"set", kv("key", "v", "value", v448), "tag_set|v|" + v448 + "\n" + undeclared},
		{"set", kv("key", "v", "value", v449), "error|value exceeds 448 bytes\n" + undeclared + rc1},
		{"set", kv("key", "e", "value", e224), "tag_set|e|" + e224 + "\n" + undeclared},
		{"set", kv("key", "e", "value", e225), "error|value exceeds 448 bytes\n" + undeclared + rc1},
		{"set", kv("key", "e", "value", euro), "error|value exceeds 448 bytes\n" + undeclared + rc1},
		// A refused set changes nothing.
		{"get", kv("key", "v"), "tag|v|" + v448 + "\n" + undeclared},
		{"get", kv("key", "e"), "tag|e|" + e224 + "\n" + undeclared},
		{"count", nil, "count|3\n" + undeclared},
	})
}

// TestEscaping shows the SDK's row escaping (docs/sdk.md) on tag keys and values: a
// `|` or trailing `\` in a key (only reachable through a file upstream wrote, or as a
// get/check/delete argument) is escaped; the value, the last field, stays raw apart
// from CR and LF.
func TestEscaping(t *testing.T) {
	dir := t.TempDir()
	file := `{
  "a|b": "v|w",
  "c\\": "d\\",
  "n": "line1\nline2"
}`
	if err := os.WriteFile(filepath.Join(dir, "tags.json"), []byte(file), 0o666); err != nil {
		t.Fatal(err)
	}
	h := sdktest.New(t, newPlugin(), sdk.Config{DataDir: dir})
	runSteps(t, h, []step{
		{"get_all", nil, "tag|a\\|b|v|w\ntag|c/|d\\\ntag|n|line1 line2\ncount|3\n" + undeclared},
		{"get", kv("key", "a|b"), "tag|a\\|b|v|w\n" + undeclared},
		{"check", kv("key", `c\`), "tag_exists|c/|true\n" + undeclared},
		{"set", kv("key", "x|y", "value", "1"), "error|invalid key: x|y\n" + undeclared + rc1},
		{"set", kv("key", "p", "value", "x|y|z"), "tag_set|p|x|y|z\n" + undeclared},
		{"set", kv("key", "q", "value", "cr\r\nlf"), "tag_set|q|cr  lf\n" + undeclared},
		{"get", kv("key", "q"), "tag|q|cr  lf\n" + undeclared},
		{"delete", kv("key", "a|b"), "tag_deleted|a\\|b|true\n" + undeclared},
	})
	// The file keeps the exact bytes; only the rows are escaped.
	want := `{
  "c\\": "d\\",
  "n": "line1\nline2",
  "p": "x|y|z",
  "q": "cr\r\nlf"
}`
	if got := readFile(t, filepath.Join(dir, "tags.json")); got != want {
		t.Errorf("tags.json:\n got %q\nwant %q", got, want)
	}
}

// TestFileFormat checks the written file byte for byte (docs/tags.md): sorted keys,
// 2-space indent, `": "`, no trailing newline, no HTML escaping, JSON escapes for
// quotes, backslashes and control characters.
func TestFileFormat(t *testing.T) {
	dir := t.TempDir()
	h := sdktest.New(t, newPlugin(), sdk.Config{DataDir: dir})
	runSteps(t, h, []step{
		{"set", kv("key", "role", "value", "web"), "tag_set|role|web\n" + undeclared},
		{"set", kv("key", "env", "value", `<a href="x">&\`), "tag_set|env|<a href=\"x\">&\\\n" + undeclared},
		{"set", kv("key", "tab", "value", "a\tb\x01"), "tag_set|tab|a\tb\x01\n" + undeclared},
	})
	want := "{\n  \"env\": \"<a href=\\\"x\\\">&\\\\\",\n  \"role\": \"web\",\n  \"tab\": \"a\\tb\\u0001\"\n}"
	if got := readFile(t, filepath.Join(dir, "tags.json")); got != want {
		t.Errorf("tags.json:\n got %q\nwant %q", got, want)
	}
}

// TestAlwaysRewrites checks that delete and clear write the file even when nothing
// changed (docs/tags.md, as upstream).
func TestAlwaysRewrites(t *testing.T) {
	for _, c := range []struct {
		action string
		params map[string]string
		want   string
	}{
		{"delete", kv("key", "absent"), "tag_deleted|absent|false\n" + undeclared},
		{"clear", nil, "tags_cleared|0\n" + undeclared},
	} {
		t.Run(c.action, func(t *testing.T) {
			dir := t.TempDir()
			h := sdktest.New(t, newPlugin(), sdk.Config{DataDir: dir})
			runSteps(t, h, []step{{c.action, c.params, c.want}})
			if got := readFile(t, filepath.Join(dir, "tags.json")); got != "{}" {
				t.Errorf("tags.json = %q, want {}", got)
			}
		})
	}
}

// TestMemoryOnly: with no data dir the store lives in memory only, as upstream, and
// nothing is written anywhere.
func TestMemoryOnly(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	h := sdktest.New(t, newPlugin(), sdk.Config{})
	runSteps(t, h, []step{
		{"set", kv("key", "k", "value", "v"), "tag_set|k|v\n" + undeclared},
		{"get", kv("key", "k"), "tag|k|v\n" + undeclared},
		{"delete", kv("key", "k"), "tag_deleted|k|true\n" + undeclared},
		{"clear", nil, "tags_cleared|0\n" + undeclared},
	})
	if names := dirNames(t, wd); len(names) != 0 {
		t.Errorf("memory-only store wrote %v", names)
	}
}

// TestLoadExisting checks that configure loads the file and the two-file layout.
func TestLoadExisting(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tags.json"), []byte(`{"role":"web","env":"prod"}`), 0o666); err != nil {
		t.Fatal(err)
	}
	h := sdktest.New(t, newPlugin(), sdk.Config{DataDir: dir})
	runSteps(t, h, []step{
		{"get_all", nil, "tag|env|prod\ntag|role|web\ncount|2\n" + undeclared},
		{"set", kv("key", "zone", "value", "eu"), "tag_set|zone|eu\n" + undeclared},
	})
	if got, want := strings.Join(dirNames(t, dir), " "), "tags.json tags.json.lock"; got != want {
		t.Errorf("data dir holds %q, want %q", got, want)
	}
}

// TestPersistFailed: a data dir path whose parent is a regular file cannot hold the
// file. That is a persistence failure, not corruption (docs/tags.md): rc 0, the normal
// row, the change stands in memory, nothing is created and the blocker is untouched.
func TestPersistFailed(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "blocker")
	if err := os.WriteFile(blocker, []byte("x"), 0o666); err != nil {
		t.Fatal(err)
	}
	h := sdktest.New(t, newPlugin(), sdk.Config{DataDir: blocker})
	runSteps(t, h, []step{
		{"get_all", nil, "count|0\n" + undeclared},
		{"set", kv("key", "k", "value", "v"), "tag_set|k|v\n" + persistFailed},
		{"get", kv("key", "k"), "tag|k|v\n" + undeclared},
		{"set", kv("key", "k2", "value", "v2"), "tag_set|k2|v2\n" + persistFailed},
		{"delete", kv("key", "k2"), "tag_deleted|k2|true\n" + persistFailed},
		{"count", nil, "count|1\n" + undeclared},
		{"clear", nil, "tags_cleared|1\n" + persistFailed},
	})
	if got := readFile(t, blocker); got != "x" {
		t.Errorf("blocker content = %q", got)
	}
	if got := strings.Join(dirNames(t, dir), " "); got != "blocker" {
		t.Errorf("dir holds %q, want only blocker", got)
	}
}

// TestCorrupt: a corrupt tags.json is moved aside, never overwritten, and every
// action answers load_failed until a write succeeds (docs/tags.md).
func TestCorrupt(t *testing.T) {
	cases := map[string]string{
		"not json":         "role=web",
		"empty":            "",
		"null":             "null",
		"array":            `["a"]`,
		"string":           `"a"`,
		"number value":     `{"a": 1}`,
		"null value":       `{"a": null}`,
		"object value":     `{"a": {"b": "c"}}`,
		"trailing garbage": `{"a": "b"} x`,
		"truncated":        `{"a": "b"`,
		"invalid utf-8":    "{\"a\": \"\xff\"}",
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "tags.json")
			if err := os.WriteFile(path, []byte(content), 0o666); err != nil {
				t.Fatal(err)
			}
			h := sdktest.New(t, newPlugin(), sdk.Config{DataDir: dir})
			moved, err := filepath.Glob(path + ".corrupt-*")
			if err != nil || len(moved) != 1 {
				t.Fatalf("moved aside: %v %v", moved, err)
			}
			if got := readFile(t, moved[0]); got != content {
				t.Errorf("moved file content = %q, want %q", got, content)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("tags.json still there after load: %v", err)
			}
			runSteps(t, h, []step{
				{"get_all", nil, "count|0\n" + loadFailed},
				{"get", kv("key", "a"), "tag|a|\n" + loadFailed},
				{"check", kv("key", "a"), "tag_exists|a|false\n" + loadFailed},
				{"count", nil, "count|0\n" + loadFailed},
				{"get", nil, "error|missing required parameter: key\n" + undeclared + rc1},
				// The first successful write ends the state, for itself and after.
				{"set", kv("key", "a", "value", "1"), "tag_set|a|1\n" + undeclared},
				{"get_all", nil, "tag|a|1\ncount|1\n" + undeclared},
			})
			if got := readFile(t, path); got != "{\n  \"a\": \"1\"\n}" {
				t.Errorf("tags.json = %q", got)
			}
			if got := readFile(t, moved[0]); got != content {
				t.Errorf("moved file changed: %q", got)
			}
		})
	}
}

// TestCorruptUntilWrite: load_failed outlasts a failed write and ends with the
// first write that succeeds, whichever action makes it.
func TestCorruptUntilWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tags.json")
	if err := os.WriteFile(path, []byte("garbage"), 0o666); err != nil {
		t.Fatal(err)
	}
	h := sdktest.New(t, newPlugin(), sdk.Config{DataDir: dir})
	// Once the corrupt file is moved aside (which needs the lock), a directory where
	// the lock file goes makes every write fail.
	if err := os.Remove(path + ".lock"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path+".lock", 0o777); err != nil {
		t.Fatal(err)
	}
	runSteps(t, h, []step{
		{"set", kv("key", "a", "value", "1"), "tag_set|a|1\n" + loadFailed},
		{"get", kv("key", "a"), "tag|a|1\n" + loadFailed},
	})
	if err := os.Remove(path + ".lock"); err != nil {
		t.Fatal(err)
	}
	runSteps(t, h, []step{
		{"delete", kv("key", "zz"), "tag_deleted|zz|false\n" + undeclared},
		{"get_all", nil, "tag|a|1\ncount|1\n" + undeclared},
	})
}

// TestCorruptAcrossRestarts: the child that found the corrupt file may stop before any
// answer told of it (an idle stop right after the agent primed it, a crash); the next
// child still answers load_failed until a write succeeds (a write after an answer
// that told of it answers normally, as in one process), and a child after that
// answers normally.
func TestCorruptAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tags.json")
	if err := os.WriteFile(path, []byte("garbage"), 0o666); err != nil {
		t.Fatal(err)
	}
	_ = sdktest.New(t, newPlugin(), sdk.Config{DataDir: dir}) // finds it, never asked
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("tags.json after the first child: %v, want it moved aside", err)
	}
	second := sdktest.New(t, newPlugin(), sdk.Config{DataDir: dir})
	runSteps(t, second, []step{
		{"count", nil, "count|0\n" + loadFailed},
		{"get_all", nil, "count|0\n" + loadFailed},
		{"set", kv("key", "a", "value", "1"), "tag_set|a|1\n" + undeclared},
	})
	third := sdktest.New(t, newPlugin(), sdk.Config{DataDir: dir})
	runSteps(t, third, []step{{"get_all", nil, "tag|a|1\ncount|1\n" + undeclared}})
}

// TestCorruptWrittenLater: a corrupt file that appears while the plugin runs (written
// by someone else) is moved aside by the next action too.
func TestCorruptWrittenLater(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tags.json")
	h := sdktest.New(t, newPlugin(), sdk.Config{DataDir: dir})
	runSteps(t, h, []step{{"set", kv("key", "a", "value", "1"), "tag_set|a|1\n" + undeclared}})
	if err := os.WriteFile(path, []byte(`{"a": 2}`), 0o666); err != nil {
		t.Fatal(err)
	}
	runSteps(t, h, []step{
		{"count", nil, "count|0\n" + loadFailed},
		{"set", kv("key", "b", "value", "2"), "tag_set|b|2\n" + undeclared},
		{"get_all", nil, "tag|b|2\ncount|1\n" + undeclared},
	})
	if moved, _ := filepath.Glob(path + ".corrupt-*"); len(moved) != 1 || readFile(t, moved[0]) != `{"a": 2}` {
		t.Errorf("moved aside: %v", moved)
	}
}

// TestUnreadableDirectory: a directory in place of tags.json is unreadable; it is
// never replaced, every action answers the error, and a repaired file is picked up.
func TestUnreadableDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tags.json")
	if err := os.MkdirAll(filepath.Join(path, "inside"), 0o777); err != nil {
		t.Fatal(err)
	}
	h := sdktest.New(t, newPlugin(), sdk.Config{DataDir: dir})
	want := "error|tags store unreadable: " + path + " is a directory" + notRegular + "\n" + undeclared + rc1
	var steps []step
	for _, s := range []step{
		{"set", kv("key", "k", "value", "v"), ""},
		{"delete", kv("key", "k"), ""},
		{"clear", nil, ""},
		{"get", kv("key", "k"), ""},
		{"get_all", nil, ""},
		{"check", kv("key", "k"), ""},
		{"count", nil, ""},
	} {
		s.want = want
		steps = append(steps, s)
	}
	runSteps(t, h, steps)
	if fi, err := os.Stat(filepath.Join(path, "inside")); err != nil || !fi.IsDir() {
		t.Errorf("directory in place of tags.json was touched: %v", err)
	}
	if moved, _ := filepath.Glob(path + ".*"); strings.Join(moved, " ") != path+".lock" {
		t.Errorf("siblings of tags.json: %v", moved)
	}
	// Repaired by hand: the next action reads it.
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"k": "v"}`), 0o666); err != nil {
		t.Fatal(err)
	}
	runSteps(t, h, []step{
		{"get_all", nil, "tag|k|v\ncount|1\n" + undeclared},
		{"set", kv("key", "k2", "value", "v2"), "tag_set|k2|v2\n" + undeclared},
	})
}

// TestConcurrentHandlers runs many sets at once in one process; every one is kept in
// memory and in the file.
func TestConcurrentHandlers(t *testing.T) {
	dir := t.TempDir()
	h := sdktest.New(t, newPlugin(), sdk.Config{DataDir: dir})
	workers, each := 8, 25
	if testing.Short() {
		// The Windows leg runs -short under Wine, where each locked, synced and
		// renamed write costs ten times what it does on Linux.
		workers, each = 4, 5
		t.Logf("-short: %d workers of %d sets instead of 8 of 25", workers, each)
	}
	var wg sync.WaitGroup
	errs := make(chan string, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				key := fmt.Sprintf("w%d_%d", w, i)
				if got, want := h.Run("set", kv("key", key, "value", "x")).String(), "tag_set|"+key+"|x\n"+undeclared; got != want {
					errs <- got
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("set answered %q", e)
	}
	runSteps(t, h, []step{{"count", nil, fmt.Sprintf("count|%d\n", workers*each) + undeclared}})
	h2 := sdktest.New(t, newPlugin(), sdk.Config{DataDir: dir})
	runSteps(t, h2, []step{{"count", nil, fmt.Sprintf("count|%d\n", workers*each) + undeclared}})
}

// TestTwoStoresOneDir: two plugin instances on one data dir (as an exec beside a
// running agent) see each other's writes and lose none.
func TestTwoStoresOneDir(t *testing.T) {
	dir := t.TempDir()
	a := sdktest.New(t, newPlugin(), sdk.Config{DataDir: dir})
	b := sdktest.New(t, newPlugin(), sdk.Config{DataDir: dir})
	runSteps(t, a, []step{{"set", kv("key", "from_a", "value", "1"), "tag_set|from_a|1\n" + undeclared}})
	runSteps(t, b, []step{
		{"get", kv("key", "from_a"), "tag|from_a|1\n" + undeclared},
		{"set", kv("key", "from_b", "value", "2"), "tag_set|from_b|2\n" + undeclared},
	})
	runSteps(t, a, []step{
		{"set", kv("key", "from_a2", "value", "3"), "tag_set|from_a2|3\n" + undeclared},
		{"get_all", nil, "tag|from_a|1\ntag|from_a2|3\ntag|from_b|2\ncount|3\n" + undeclared},
	})
	runSteps(t, b, []step{
		{"delete", kv("key", "from_a"), "tag_deleted|from_a|true\n" + undeclared},
	})
	runSteps(t, a, []step{
		{"get_all", nil, "tag|from_a2|3\ntag|from_b|2\ncount|2\n" + undeclared},
		{"clear", nil, "tags_cleared|2\n" + undeclared},
	})
	runSteps(t, b, []step{{"count", nil, "count|0\n" + undeclared}})
}
