//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
	"github.com/yuzugo/yuzu/sdk/sdktest"
)

// runWithin runs one command on the child with a deadline of d and fails the test
// when it does not answer in time.
func (c *child) runWithin(d time.Duration, action string, params map[string]string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	var o sdktest.Outcome
	res, err := c.client.Execute(ctx, host.Command{Action: action, Params: params, Deadline: time.Now().Add(d)}, func(rows []string) error {
		o.Rows = append(o.Rows, rows...)
		return nil
	})
	if err != nil {
		c.t.Fatalf("%s: no answer within %v: %v", action, d, err)
	}
	if took := time.Since(start); took > d {
		c.t.Fatalf("%s took %v", action, took)
	}
	o.Result = res
	return o.String()
}

// waitLog waits up to 5 s for a JSON log line on the child's stderr that match
// accepts, and returns it.
func (c *child) waitLog(what string, match func(map[string]any) bool) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		sc := bufio.NewScanner(strings.NewReader(c.stderr.String()))
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && match(m) {
				return m
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("stderr has no log line %s:\n%s", what, c.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func message(m map[string]any) string {
	s, _ := m["@message"].(string)
	return s
}

// TestHostileFiles: a FIFO, a symlink to /dev/zero, a directory or a Unix socket at
// tags.json or at tags.json.lock. Every action of a real plugin process answers
// within 1 s, nothing blocks or reads without bound, and the answer (or for the lock
// file, the log line beside persist_failed) names the path and what is there.
func TestHostileFiles(t *testing.T) {
	kinds := []struct {
		name string
		make func(t *testing.T, path string)
		says string
	}{
		{"fifo", func(t *testing.T, p string) {
			if err := unix.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "is a named pipe (FIFO)"},
		{"dev zero symlink", func(t *testing.T, p string) {
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
		}, "is a symbolic link"},
		{"directory", func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "is a directory"},
		{"socket", func(t *testing.T, p string) {
			l, err := net.Listen("unix", p)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.Close() })
		}, "is a socket"},
	}
	for _, k := range kinds {
		t.Run("tags.json "+k.name, func(t *testing.T) {
			dir := shortTempDir(t)
			path := filepath.Join(dir, "tags.json")
			k.make(t, path)
			c := startChild(t, sdk.Config{DataDir: dir}, nil)
			want := "error|tags store unreadable: " + path + " " + k.says + notRegular + "\n" + undeclared + rc1
			for _, s := range []step{
				{"set", kv("key", "k", "value", "v"), want},
				{"get", kv("key", "k"), want},
				{"get_all", nil, want},
				{"delete", kv("key", "k"), want},
				{"check", kv("key", "k"), want},
				{"clear", nil, want},
				{"count", nil, want},
			} {
				if got := c.runWithin(time.Second, s.action, s.params); got != s.want {
					t.Errorf("%s: got %q want %q", s.action, got, s.want)
				}
			}
		})
		t.Run("tags.json.lock "+k.name, func(t *testing.T) {
			dir := shortTempDir(t)
			path := filepath.Join(dir, "tags.json")
			const content = "{\n  \"a\": \"1\"\n}"
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			k.make(t, path+".lock")
			c := startChild(t, sdk.Config{DataDir: dir}, nil)
			for _, s := range []step{
				{"set", kv("key", "k", "value", "v"), "tag_set|k|v\n" + persistFailed},
				{"get", kv("key", "a"), "tag|a|1\n" + undeclared},
				{"get_all", nil, "tag|a|1\ntag|k|v\ncount|2\n" + undeclared},
				{"delete", kv("key", "k"), "tag_deleted|k|true\n" + persistFailed},
				{"check", kv("key", "a"), "tag_exists|a|true\n" + undeclared},
				{"clear", nil, "tags_cleared|1\n" + persistFailed},
				{"count", nil, "count|0\n" + undeclared},
			} {
				if got := c.runWithin(time.Second, s.action, s.params); got != s.want {
					t.Errorf("%s: got %q want %q", s.action, got, s.want)
				}
			}
			want := "tags: state not persisted: lock: " + path + ".lock " + k.says + notRegular
			c.waitLog("saying "+want, func(m map[string]any) bool { return message(m) == want })
			if got := readFile(t, path); got != content {
				t.Errorf("tags.json written without the lock: %q", got)
			}
		})
	}
}

// TestCorruptMoveLoggedChild: the warning about a corrupt tags.json found at configure
// reaches the agent's log (the plugin's stderr) with the file's path and the path it
// was moved to.
func TestCorruptMoveLoggedChild(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tags.json")
	if err := os.WriteFile(path, []byte(`{"a": "1"`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startChild(t, sdk.Config{DataDir: dir}, nil)
	if got, want := c.run("count", nil), "count|0\n"+loadFailed; got != want {
		t.Errorf("count: got %q want %q", got, want)
	}
	moved, _ := filepath.Glob(path + ".corrupt-*")
	if len(moved) != 1 {
		t.Fatalf("moved aside: %v", moved)
	}
	m := c.waitLog("about the move", func(m map[string]any) bool { return strings.Contains(message(m), "moved aside") })
	if m["path"] != path || m["moved_to"] != moved[0] || !strings.Contains(message(m), path) || !strings.Contains(message(m), moved[0]) {
		t.Errorf("log line %v lacks %s or %s", m, path, moved[0])
	}
}

// TestStaleTempRemovedAtStart: a temp file left by a write that was killed before
// its rename is removed when the plugin opens the store, and the removal is logged.
func TestStaleTempRemovedAtStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tags.json")
	if err := os.WriteFile(path, []byte(`{"a": "1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	leftover := path + ".tmp.00112233445566ff"
	if err := os.WriteFile(leftover, []byte(`{"a": "1", "b"`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startChild(t, sdk.Config{DataDir: dir}, nil)
	if got, want := c.run("get_all", nil), "tag|a|1\ncount|1\n"+undeclared; got != want {
		t.Errorf("get_all: got %q want %q", got, want)
	}
	if _, err := os.Lstat(leftover); !os.IsNotExist(err) {
		t.Errorf("leftover still there: %v", err)
	}
	c.waitLog("naming "+leftover, func(m map[string]any) bool {
		return m["path"] == leftover && strings.Contains(message(m), "removed")
	})
}

// shortTempDir returns a directory with a short path, so a Unix socket fits in it.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "yt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
