package main

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/yuzugo/yuzu/sdk"
)

// TestUnreadableAsNobody runs the plugin as user nobody against a root-owned 0600
// tags.json in a directory nobody may write: the file cannot be read, so every action
// answers the unreadable error, and although nobody could rename a new file over it,
// it is never overwritten or moved.
func TestUnreadableAsNobody(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root, to start the plugin as user nobody")
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("look up user nobody: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)

	base := t.TempDir()
	dir := filepath.Join(base, "data")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	// t.TempDir makes 0700 directories; nobody must be able to reach the data dir,
	// and write in it (umask would trim the modes above).
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tags.json")
	const content = "{\n  \"owner\": \"root\"\n}"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}

	c := startChild(t, sdk.Config{DataDir: dir}, func(cmd *exec.Cmd) {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	})
	want := "error|tags store unreadable: open " + path + ": permission denied\n" + undeclared + rc1
	for _, s := range []step{
		{"set", kv("key", "k", "value", "v"), want},
		{"delete", kv("key", "owner"), want},
		{"clear", nil, want},
		{"get", kv("key", "owner"), want},
		{"get_all", nil, want},
		{"check", kv("key", "owner"), want},
		{"count", nil, want},
	} {
		if got := c.run(s.action, s.params); got != s.want {
			t.Errorf("%s: got %q want %q", s.action, got, s.want)
		}
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != content {
		t.Errorf("tags.json = %q, %v", b, err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil || st.Uid != 0 || st.Mode&0o777 != 0o600 {
		t.Errorf("tags.json owner/mode changed: uid %d mode %o %v", st.Uid, st.Mode&0o777, err)
	}
	if got := dirNames(t, dir); len(got) != 2 || got[0] != "tags.json" || got[1] != "tags.json.lock" {
		t.Errorf("data dir holds %v, want tags.json and its lock file", got)
	}
}
