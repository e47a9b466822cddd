package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// withMaxBytes lowers the file size bound, so tests need not write 16 MiB.
func withMaxBytes(n int) Option { return func(s *Store) { s.maxBytes = n } }

// logBuffer collects a JSON hclog logger's lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) logger() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: l, JSONFormat: true, Level: hclog.Info})
}

// lines returns the logged lines, decoded.
func (l *logBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(l.b.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// TestFull: a change that would make tags.json larger than the bound is refused with
// a FullError and changes nothing, in memory or on disk; the file stays readable, and
// delete and clear still work. A file of exactly the bound is written and read back.
func TestFull(t *testing.T) {
	const limit = 40
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	s := Open(context.Background(), dir, nil, withMaxBytes(limit))
	// {\n  "a": "1",\n  "b": "<v>"\n} is 25 bytes plus len(v).
	if st := set(t, s, "a", "1", "b", strings.Repeat("v", limit-25)); st != (State{}) {
		t.Fatalf("set to exactly the bound: %+v", st)
	}
	atLimit, err := os.ReadFile(path)
	if err != nil || len(atLimit) != limit {
		t.Fatalf("tags.json is %d bytes (%v), want %d", len(atLimit), err, limit)
	}
	if got := snapshotOf(t, Open(context.Background(), dir, nil, withMaxBytes(limit))); len(got) != 2 {
		t.Errorf("a file of exactly the bound does not read back: %v", got)
	}
	before := snapshotOf(t, s)

	for _, fn := range []func(map[string]string){
		func(m map[string]string) { m["c"] = "" },
		func(m map[string]string) { m["b"] += "w" },
		func(m map[string]string) { delete(m, "a"); m["b"] += strings.Repeat("w", 13) },
	} {
		st, err := s.Update(context.Background(), nil, fn)
		var full *FullError
		if !errors.As(err, &full) || st != (State{}) {
			t.Fatalf("Update over the bound = %+v, %v; want a FullError", st, err)
		}
		if want := "tags store full: the change would make tags.json larger than 40 bytes"; err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
	}
	if got := snapshotOf(t, s); !maps.Equal(got, before) {
		t.Errorf("memory after refused changes: %v, want %v", got, before)
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, atLimit) {
		t.Errorf("tags.json changed: %q %v", b, err)
	}
	// Without the lock (the change would be kept in memory only) the bound holds too.
	held, err := acquireLock(context.Background(), path+LockSuffix)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	_, err = s.Update(ctx, nil, func(m map[string]string) { m["c"] = "" })
	cancel()
	held.release()
	if _, ok := errors.AsType[*FullError](err); !ok {
		t.Errorf("Update over the bound without the lock = %v, want a FullError", err)
	}
	if got := snapshotOf(t, s); !maps.Equal(got, before) {
		t.Errorf("memory after a refused change without the lock: %v", got)
	}
	// Shrinking changes work.
	st, err := s.Update(context.Background(), nil, func(m map[string]string) { delete(m, "b") })
	if err != nil || st != (State{}) {
		t.Errorf("delete: %+v %v", st, err)
	}
	st, err = s.Update(context.Background(), nil, func(m map[string]string) { clear(m) })
	if err != nil || st != (State{}) {
		t.Errorf("clear: %+v %v", st, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "{}" {
		t.Errorf("tags.json after clear = %q", b)
	}
}

func read(t *testing.T, s *Store, log hclog.Logger) State {
	t.Helper()
	st, err := s.Read(context.Background(), log, func(map[string]string) {})
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return st
}

func update(t *testing.T, s *Store, log hclog.Logger, kv ...string) State {
	t.Helper()
	st, err := s.Update(context.Background(), log, func(tags map[string]string) {
		for i := 0; i+1 < len(kv); i += 2 {
			tags[kv[i]] = kv[i+1]
		}
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	return st
}

// TestCorruptFoundByWrite: the call that finds a corrupt file reports LoadFailed even
// when its own write succeeds, and so do the calls after it until a later write
// succeeds. Before, a set that found a truncated file dropped the other tags and
// answered as if nothing had happened.
func TestCorruptFoundByWrite(t *testing.T) {
	loadFailed := State{LoadFailed: true}
	t.Run("written while open", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, FileName)
		s := Open(context.Background(), dir, nil)
		set(t, s, "a", "1", "b", "2")
		if err := os.WriteFile(path, []byte("{\n  \"a\": \"1\",\n  \"b\""), 0o600); err != nil {
			t.Fatal(err)
		}
		if st := update(t, s, nil, "c", "3"); st != loadFailed {
			t.Errorf("set that found the truncated file: %+v, want LoadFailed", st)
		}
		if got := snapshotOf(t, s); !maps.Equal(got, map[string]string{"c": "3"}) {
			t.Errorf("memory %v", got)
		}
		if st := read(t, s, nil); st != loadFailed {
			t.Errorf("read after: %+v", st)
		}
		if st := update(t, s, nil, "d", "4"); st != (State{}) {
			t.Errorf("next successful write: %+v, want no state", st)
		}
		if st := read(t, s, nil); st != (State{}) {
			t.Errorf("read after the next write: %+v", st)
		}
	})
	t.Run("found at open, first call a write", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, FileName), []byte(`{"a": "1"`), 0o600); err != nil {
			t.Fatal(err)
		}
		s := Open(context.Background(), dir, nil)
		if st := update(t, s, nil, "c", "3"); st != loadFailed {
			t.Errorf("first write after the corrupt load: %+v, want LoadFailed", st)
		}
		if st := read(t, s, nil); st != loadFailed {
			t.Errorf("read after: %+v", st)
		}
		if st := update(t, s, nil, "d", "4"); st != (State{}) {
			t.Errorf("next successful write: %+v", st)
		}
	})
	t.Run("found at open, read first", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, FileName), []byte(`[]`), 0o600); err != nil {
			t.Fatal(err)
		}
		s := Open(context.Background(), dir, nil)
		if st := read(t, s, nil); st != loadFailed {
			t.Errorf("read: %+v", st)
		}
		// The read told of it: the first successful write ends the state.
		if st := update(t, s, nil, "c", "3"); st != (State{}) {
			t.Errorf("write after the read: %+v", st)
		}
	})
}

// TestCorruptMoveLogged: the warning about a corrupt file moved aside names both the
// file and where it went. Found at Open without a logger (the plugin's configure has
// none), it is logged by the first call that has one.
func TestCorruptMoveLogged(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	moved := path + ".corrupt-20260102T030405Z"
	check := func(t *testing.T, lines []map[string]any) {
		t.Helper()
		n := 0
		for _, l := range lines {
			msg, _ := l["@message"].(string)
			if !strings.Contains(msg, "moved aside") {
				continue
			}
			n++
			if l["path"] != path || l["moved_to"] != moved || !strings.Contains(msg, path) || !strings.Contains(msg, moved) {
				t.Errorf("log line %v does not carry both %s and %s", l, path, moved)
			}
		}
		if n != 1 {
			t.Errorf("%d move-aside lines in %v, want 1", n, lines)
		}
	}
	t.Run("at open", func(t *testing.T) {
		if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		s := Open(context.Background(), dir, nil, WithClock(func() time.Time { return at }))
		var lb logBuffer
		read(t, s, lb.logger())
		check(t, lb.lines(t))
		// Logged once only.
		var again logBuffer
		read(t, s, again.logger())
		if l := again.lines(t); len(l) != 0 {
			t.Errorf("logged again: %v", l)
		}
	})
	t.Run("later", func(t *testing.T) {
		if err := os.Remove(moved); err != nil {
			t.Fatal(err)
		}
		s := Open(context.Background(), dir, nil, WithClock(func() time.Time { return at }))
		set(t, s, "a", "1")
		if err := os.WriteFile(path, []byte(`{"a": 1}`), 0o600); err != nil {
			t.Fatal(err)
		}
		var lb logBuffer
		update(t, s, lb.logger(), "b", "2")
		check(t, lb.lines(t))
	})
}
