package store

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/sdk/safefile"
)

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// snapshotOf returns a copy of the store's map.
func snapshotOf(t *testing.T, s *Store) map[string]string {
	t.Helper()
	var m map[string]string
	if _, err := s.Read(context.Background(), nil, func(tags map[string]string) { m = maps.Clone(tags) }); err != nil {
		t.Fatalf("Read: %v", err)
	}
	return m
}

func set(t *testing.T, s *Store, kv ...string) State {
	t.Helper()
	st, err := s.Update(context.Background(), nil, func(tags map[string]string) {
		for i := 0; i+1 < len(kv); i += 2 {
			tags[kv[i]] = kv[i+1]
		}
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	return st
}

// TestRoundTrip: save, then a fresh load gives the same map, and the data dir holds
// only tags.json and its lock file.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s := Open(context.Background(), dir, nil)
	if st := set(t, s, "role", "web", "env", "prod"); st != (State{}) {
		t.Fatalf("state %+v", st)
	}
	got := snapshotOf(t, Open(context.Background(), dir, nil))
	if want := map[string]string{"role": "web", "env": "prod"}; !maps.Equal(got, want) {
		t.Errorf("loaded %v, want %v", got, want)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"tags.json", "tags.json.lock"}) {
		t.Errorf("data dir holds %v", got)
	}
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil || string(b) != "{\n  \"env\": \"prod\",\n  \"role\": \"web\"\n}" {
		t.Errorf("tags.json = %q, %v", b, err)
	}
}

// TestBlocker: a save whose parent is a regular file fails without touching it or
// creating anything, and the change stays in memory.
func TestBlocker(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "blocker")
	if err := os.WriteFile(blocker, []byte("x"), 0o666); err != nil {
		t.Fatal(err)
	}
	s := Open(context.Background(), blocker, nil)
	if s.Path() != filepath.Join(blocker, "tags.json") {
		t.Errorf("Path() = %q", s.Path())
	}
	st := set(t, s, "a", "1")
	if st.PersistErr == nil || st.LoadFailed {
		t.Errorf("state %+v, want a PersistErr", st)
	}
	if got := snapshotOf(t, s); !maps.Equal(got, map[string]string{"a": "1"}) {
		t.Errorf("memory %v", got)
	}
	if b, _ := os.ReadFile(blocker); string(b) != "x" {
		t.Errorf("blocker = %q", b)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"blocker"}) {
		t.Errorf("dir holds %v", got)
	}
}

// TestCorruptNames: corrupt files are moved to tags.json.corrupt-<UTC time>, with -1,
// -2 on a clash, and keep their content.
func TestCorruptNames(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("X", 3600))
	clock := WithClock(func() time.Time { return at })
	for i, want := range []string{"tags.json.corrupt-20260304T040607Z", "tags.json.corrupt-20260304T040607Z-1", "tags.json.corrupt-20260304T040607Z-2"} {
		content := strings.Repeat("x", i+1)
		if err := os.WriteFile(path, []byte(content), 0o666); err != nil {
			t.Fatal(err)
		}
		s := Open(context.Background(), dir, nil, clock)
		if st, err := s.Read(context.Background(), nil, func(map[string]string) {}); err != nil || !st.LoadFailed {
			t.Errorf("round %d: %+v %v, want LoadFailed", i, st, err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, want)); err != nil || string(b) != content {
			t.Errorf("round %d: %s = %q, %v; want %q", i, want, b, err, content)
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("tags.json still present: %v", err)
	}
}

// TestLockWait: an update waits for another holder of the lock; when the wait ends
// with the command's context, nothing is written and the change stays in memory.
func TestLockWait(t *testing.T) {
	dir := t.TempDir()
	s := Open(context.Background(), dir, nil)
	set(t, s, "a", "1")
	held, err := acquireLock(context.Background(), s.Path()+LockSuffix)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	st, err := s.Update(ctx, nil, func(tags map[string]string) { tags["b"] = "2" })
	if err != nil || !errors.Is(st.PersistErr, context.DeadlineExceeded) {
		t.Fatalf("Update under a held lock: %+v %v", st, err)
	}
	if b, _ := os.ReadFile(s.Path()); string(b) != "{\n  \"a\": \"1\"\n}" {
		t.Errorf("file written without the lock: %q", b)
	}
	done := make(chan State)
	go func() {
		st, _ := s.Update(context.Background(), nil, func(tags map[string]string) { tags["c"] = "3" })
		done <- st
	}()
	time.Sleep(50 * time.Millisecond)
	select {
	case st := <-done:
		t.Fatalf("Update did not wait for the lock: %+v", st)
	default:
	}
	held.release()
	if st := <-done; st != (State{}) {
		t.Errorf("after release: %+v", st)
	}
	got := snapshotOf(t, Open(context.Background(), dir, nil))
	if want := map[string]string{"a": "1", "b": "2", "c": "3"}; !maps.Equal(got, want) {
		t.Errorf("file holds %v, want %v", got, want)
	}
}

// TestTooLarge: a file over MaxFileBytes is reported unreadable and left alone.
func TestTooLarge(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, make([]byte, MaxFileBytes+1), 0o666); err != nil {
		t.Fatal(err)
	}
	s := Open(context.Background(), dir, nil)
	_, err := s.Update(context.Background(), nil, func(tags map[string]string) { tags["a"] = "1" })
	var u *UnreadableError
	if !errors.As(err, &u) || !errors.Is(err, safefile.ErrTooLarge) || !strings.HasPrefix(err.Error(), path+" is ") {
		t.Errorf("Update = %v, want UnreadableError for a file too large, naming %s", err, path)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != MaxFileBytes+1 {
		t.Errorf("file changed: %v %v", fi, err)
	}
}
