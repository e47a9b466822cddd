//go:build linux

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestExecTagsActions runs every tags action through real `yuzu-agent exec`
// processes, in order, against one data dir, and checks the exact capture text.
// Every step is a new agent and a new plugin process, so each step also checks that
// the previous steps persisted.
func TestExecTagsActions(t *testing.T) {
	t.Parallel()
	w := newWorld(t, tagsBin)
	steps := []struct {
		args []string
		want string
		code int
	}{
		{[]string{"tags", "count"}, "count|0\n" + undeclared, 0},
		{[]string{"tags", "get_all"}, "count|0\n" + undeclared, 0},
		{[]string{"tags", "set", "key=env", "value=prod"}, "tag_set|env|prod\n" + undeclared, 0},
		{[]string{"tags", "get", "key=env"}, "tag|env|prod\n" + undeclared, 0},
		{[]string{"tags", "set", "key=role", "value=web"}, "tag_set|role|web\n" + undeclared, 0},
		{[]string{"tags", "set", "key=a.b:c-d_e", "value="}, "tag_set|a.b:c-d_e|\n" + undeclared, 0},
		// The last field is free text: a | in a value stays raw (docs/sdk.md).
		{[]string{"tags", "set", "key=pipe", "value=x|y"}, "tag_set|pipe|x|y\n" + undeclared, 0},
		{[]string{"tags", "get_all"}, "tag|a.b:c-d_e|\ntag|env|prod\ntag|pipe|x|y\ntag|role|web\ncount|4\n" + undeclared, 0},
		{[]string{"tags", "count"}, "count|4\n" + undeclared, 0},
		{[]string{"tags", "check", "key=env"}, "tag_exists|env|true\n" + undeclared, 0},
		{[]string{"tags", "check", "key=nope"}, "tag_exists|nope|false\n" + undeclared, 0},
		{[]string{"tags", "get", "key=nope"}, "tag|nope|\n" + undeclared, 0},
		{[]string{"tags", "delete", "key=env"}, "tag_deleted|env|true\n" + undeclared, 0},
		{[]string{"tags", "delete", "key=env"}, "tag_deleted|env|false\n" + undeclared, 0},
		{[]string{"tags", "check", "key=env"}, "tag_exists|env|false\n" + undeclared, 0},
		{[]string{"tags", "set", "key=env", "value=staging"}, "tag_set|env|staging\n" + undeclared, 0},
		{[]string{"tags", "get", "key=env"}, "tag|env|staging\n" + undeclared, 0},
		// Failures of the plugin itself: one error row, rc 1.
		{[]string{"tags", "set", "value=x"}, "error|missing required parameter: key\n" + undeclared + rc1, 1},
		{[]string{"tags", "get", "key="}, "error|missing required parameter: key\n" + undeclared + rc1, 1},
		{[]string{"tags", "delete"}, "error|missing required parameter: key\n" + undeclared + rc1, 1},
		{[]string{"tags", "check"}, "error|missing required parameter: key\n" + undeclared + rc1, 1},
		{[]string{"tags", "set", "key=a b", "value=x"}, "error|invalid key: a b\n" + undeclared + rc1, 1},
		{[]string{"tags", "set", "key=" + strings.Repeat("k", 65), "value=x"}, "error|key exceeds 64 characters\n" + undeclared + rc1, 1},
		{[]string{"tags", "set", "key=big", "value=" + strings.Repeat("v", 449)}, "error|value exceeds 448 bytes\n" + undeclared + rc1, 1},
		{[]string{"tags", "set", "key=" + strings.Repeat("k", 64), "value=" + strings.Repeat("v", 448)},
			"tag_set|" + strings.Repeat("k", 64) + "|" + strings.Repeat("v", 448) + "\n" + undeclared, 0},
		{[]string{"tags", "delete", "key=" + strings.Repeat("k", 64)}, "tag_deleted|" + strings.Repeat("k", 64) + "|true\n" + undeclared, 0},
		{[]string{"tags", "clear"}, "tags_cleared|4\n" + undeclared, 0},
		{[]string{"tags", "clear"}, "tags_cleared|0\n" + undeclared, 0},
		{[]string{"tags", "get_all"}, "count|0\n" + undeclared, 0},
	}
	for _, s := range steps {
		w.expect(s.want, s.code, s.args...)
	}
	// clear always rewrites tags.json (docs/tags.md): an empty object.
	if got := readFile(t, filepath.Join(w.dataDir, "tags.json")); got != "{}" {
		t.Errorf("tags.json after clear = %q, want {}", got)
	}
}

// TestExecTagsPersistence sets tags in one agent process and reads them in the next,
// and checks the file's shape (docs/tags.md: flat object, keys sorted, 2-space
// indent).
func TestExecTagsPersistence(t *testing.T) {
	t.Parallel()
	w := newWorld(t, tagsBin)
	w.expect("tag_set|zeta|last\n"+undeclared, 0, "tags", "set", "key=zeta", "value=last")
	w.expect("tag_set|alpha|\"q\" \\ b\n"+undeclared, 0, "tags", "set", "key=alpha", `value="q" \ b`)
	w.expect("tag|zeta|last\n"+undeclared, 0, "tags", "get", "key=zeta")
	w.expect("tag|alpha|\"q\" \\ b\n"+undeclared, 0, "tags", "get", "key=alpha")
	want := "{\n  \"alpha\": \"\\\"q\\\" \\\\ b\",\n  \"zeta\": \"last\"\n}"
	if got := readFile(t, filepath.Join(w.dataDir, "tags.json")); got != want {
		t.Errorf("tags.json:\n got %q\nwant %q", got, want)
	}
	// A second agent with another data dir sees none of it.
	other := &world{t: t, pluginDir: w.pluginDir, dataDir: t.TempDir()}
	other.expect("count|0\n"+undeclared, 0, "tags", "count")
}

// TestExecTagsDefinition runs tags through `exec DEFINITION-ID`: parameters that fail
// the definition are refused by the agent before any plugin runs, with one error row
// naming the parameter.
func TestExecTagsDefinition(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
		code int
	}{
		{"bad key", []string{"device.tags.set", "key=a b", "value=x"},
			agentError("invalid key: a b"), 1},
		{"key too long", []string{"device.tags.set", "key=" + strings.Repeat("k", 65), "value=x"},
			agentError("key exceeds 64 characters"), 1},
		{"oversize value", []string{"device.tags.set", "key=k", "value=" + strings.Repeat("v", 449)},
			agentError("value exceeds 448 bytes"), 1},
		{"multi-byte value counts bytes", []string{"device.tags.set", "key=k", "value=" + strings.Repeat("é", 225)},
			agentError("value exceeds 448 bytes"), 1},
		{"unknown parameter", []string{"device.tags.set", "key=k", "value=v", "colour=red"},
			agentError("parameter colour: unknown parameter for device.tags.set"), 1},
		{"missing required", []string{"device.tags.get"},
			agentError("missing required parameter: key"), 1},
		{"unknown definition", []string{"device.tags.nope"},
			agentError("unknown definition: device.tags.nope"), 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, tagsBin)
			w.expect(c.want, c.code, c.args...)
			// Refused before the plugin ran, and exec itself writes nothing but
			// the record of a verification (docs/agent.md): the data dir holds
			// nothing else.
			ents, _ := os.ReadDir(w.dataDir)
			ents = slices.DeleteFunc(ents, func(e os.DirEntry) bool { return e.Name() == "verified" })
			if len(ents) != 0 {
				t.Errorf("data dir not empty after a refused command: %v", ents)
			}
		})
	}
	t.Run("valid", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, tagsBin)
		w.expect("tag_set|env|prod\n"+undeclared, 0, "device.tags.set", "key=env", "value=prod")
		w.expect("tag|env|prod\ncount|1\n"+undeclared, 0, "device.tags.get_all")
		w.expect("tag_exists|env|true\n"+undeclared, 0, "device.tags.check", "key=env")
	})
}

// TestExecCorruptTagsJSON checks docs/tags.md (corrupt and unreadable files) end to end: a corrupt tags.json
// is moved aside, never overwritten, and the answer says so.
func TestExecCorruptTagsJSON(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, content string }{
		{"truncated", `{"a": "1"`},
		{"number value", `{"a": 1}`},
		{"array", `["a"]`},
		{"binary", "\x00\x01garbage"},
	}
	for _, c := range cases {
		content := c.content
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, tagsBin)
			writeFile(t, filepath.Join(w.dataDir, "tags.json"), content, 0o644)
			w.expect("count|0\n[result_status] CONSTRAINED / PARTIAL / tags:load_failed\n", 0, "tags", "get_all")
			ents, err := os.ReadDir(w.dataDir)
			if err != nil {
				t.Fatal(err)
			}
			var moved []string
			for _, e := range ents {
				if regexp.MustCompile(`^tags\.json\.corrupt-\d{8}T\d{6}Z(-\d+)?$`).MatchString(e.Name()) {
					moved = append(moved, e.Name())
				}
				if e.Name() == "tags.json" {
					t.Errorf("tags.json still in place after it was found corrupt")
				}
			}
			if len(moved) != 1 {
				t.Fatalf("want one tags.json.corrupt-<time> file, have %v", ents)
			}
			if got := readFile(t, filepath.Join(w.dataDir, moved[0])); got != content {
				t.Errorf("moved-aside file content = %q, want the original %q", got, content)
			}
			// The next process inherits the state (no tags.json, a moved-aside file):
			// its write cannot know an earlier answer told of the loss, so it tells
			// too, and writes a good file, which ends the state for the next one.
			w.expect("tag_set|a|1\n[result_status] CONSTRAINED / PARTIAL / tags:load_failed\n", 0, "tags", "set", "key=a", "value=1")
			w.expect("tag|a|1\ncount|1\n"+undeclared, 0, "tags", "get_all")
			if got := readFile(t, filepath.Join(w.dataDir, moved[0])); got != content {
				t.Errorf("moved-aside file changed later: %q", got)
			}
		})
	}
}

// TestExecUnwritableDataDir puts a regular file where the data dir should be: a set
// still answers its row, declares tags:persist_failed, and changes nothing on disk.
func TestExecUnwritableDataDir(t *testing.T) {
	t.Parallel()
	w := newWorld(t, tagsBin)
	blocker := filepath.Join(t.TempDir(), "data")
	writeFile(t, blocker, "x", 0o644)
	w.dataDir = blocker
	w.expect("tag_set|k|v\n[result_status] CONSTRAINED / PARTIAL / tags:persist_failed\n", 0, "tags", "set", "key=k", "value=v")
	w.expect("tag_deleted|k|false\n[result_status] CONSTRAINED / PARTIAL / tags:persist_failed\n", 0, "tags", "delete", "key=k")
	w.expect("tags_cleared|0\n[result_status] CONSTRAINED / PARTIAL / tags:persist_failed\n", 0, "tags", "clear")
	// Reads are not persistence problems: nothing was saved, so nothing is there.
	w.expect("tag|k|\n"+undeclared, 0, "tags", "get", "key=k")
	if got := readFile(t, blocker); got != "x" {
		t.Errorf("the file in the data dir's place changed: %q", got)
	}
}

// TestExecTwoAgentsShareDataDir runs two loops of exec processes at once against one
// data dir, 30 different keys each: every update must survive (docs/tags.md).
func TestExecTwoAgentsShareDataDir(t *testing.T) {
	t.Parallel()
	w := newWorld(t, tagsBin)
	const perLoop = 30
	var wg sync.WaitGroup
	for _, prefix := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perLoop {
				key := fmt.Sprintf("%s%02d", prefix, i)
				r := w.exec("tags", "set", "key="+key, "value="+key)
				if want := "tag_set|" + key + "|" + key + "\n" + undeclared; r.stdout != want || r.code != 0 {
					t.Errorf("set %s: %s", key, r)
				}
			}
		}()
	}
	wg.Wait()
	var want strings.Builder
	for _, prefix := range []string{"a", "b"} {
		for i := range perLoop {
			key := fmt.Sprintf("%s%02d", prefix, i)
			want.WriteString("tag|" + key + "|" + key + "\n")
		}
	}
	want.WriteString("count|60\n" + undeclared)
	w.expect(want.String(), 0, "tags", "get_all")
}
