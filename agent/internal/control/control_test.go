//go:build !windows

package control

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/agent/supervisor"
)

func serve(t *testing.T, dataDir string, r Report) {
	t.Helper()
	serveWith(t, dataDir, Handlers{Status: func() Report { return r }})
}

func serveWith(t *testing.T, dataDir string, h Handlers) {
	t.Helper()
	l, err := Listen(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, l, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

func TestQueryAnswersTheReport(t *testing.T) {
	data := t.TempDir()
	want := Report{Version: "1.2.3", PID: 42, Connected: true, QueueDepth: 3,
		Plugins: []supervisor.Status{{Name: "tags", State: supervisor.StateRunning, Restarts: 2, LastError: "bad\nline"}}}
	serve(t, data, want)
	for path, mode := range map[string]os.FileMode{Dir(data): 0o700 | os.ModeDir, Path(data): 0o600 | os.ModeSocket} {
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != mode {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode(), mode)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := Query(ctx, Path(data))
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != "1.2.3" || got.PID != 42 || !got.Connected || got.QueueDepth != 3 || len(got.Plugins) != 1 ||
		got.Plugins[0].Restarts != 2 || got.Plugins[0].LastError != "bad\nline" {
		t.Errorf("report = %+v", got)
	}
}

func TestListenRefusesASecondAgent(t *testing.T) {
	data := t.TempDir()
	serve(t, data, Report{})
	if _, err := Listen(data); err == nil || !strings.Contains(err.Error(), "another agent answers") {
		t.Errorf("second Listen: %v", err)
	}
}

func TestListenReplacesAStaleSocket(t *testing.T) {
	data := t.TempDir()
	l, err := Listen(data)
	if err != nil {
		t.Fatal(err)
	}
	// A dead agent's socket: the file stays, nobody answers.
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	if _, err := os.Lstat(Path(data)); err != nil {
		t.Fatal(err)
	}
	l, err = Listen(data)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	l.Close()
}

func TestListenRefusesWhatIsNotASocket(t *testing.T) {
	data := t.TempDir()
	if err := os.MkdirAll(Dir(data), 0o700); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, Path(data)); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(data); err == nil || !strings.Contains(err.Error(), "not the agent's socket") {
		t.Errorf("Listen over a link: %v", err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep" {
		t.Errorf("the link's target changed: %q %v", b, err)
	}
}

func TestListenRefusesAWritableDir(t *testing.T) {
	data := t.TempDir()
	if err := os.Chmod(data, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(data); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("Listen under a world-writable data dir: %v", err)
	}
}

func TestQueryWithoutAnAgent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Query(ctx, Path(t.TempDir()))
	if err == nil || !strings.Contains(err.Error(), ErrNotRunning.Error()) {
		t.Errorf("Query = %v", err)
	}
}

func TestUnknownRequest(t *testing.T) {
	data := t.TempDir()
	serve(t, data, Report{Version: "x"})
	c, err := net.Dial("unix", Path(data))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("dump everything\n")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 512)
	n, _ := c.Read(b)
	if !strings.Contains(string(b[:n]), "unknown request") {
		t.Errorf("answer = %q", b[:n])
	}
}

// A reload runs the agent's handler and brings back what it reports; an agent without
// one says so.
func TestReload(t *testing.T) {
	data := t.TempDir()
	serveWith(t, data, Handlers{Status: func() Report { return Report{} }, Reload: func(ctx context.Context) ReloadReport {
		if _, ok := ctx.Deadline(); !ok {
			return ReloadReport{Error: "no deadline"}
		}
		return ReloadReport{Changes: []supervisor.Change{{Plugin: "procs", Kind: "upgraded", From: "1.0.0", To: "2.0.0"}}}
	}})
	got, err := Reload(context.Background(), Path(data))
	if err != nil || got.Error != "" || len(got.Changes) != 1 || got.Changes[0].To != "2.0.0" {
		t.Errorf("reload: %+v %v", got, err)
	}
	other := t.TempDir()
	serve(t, other, Report{})
	if got, err := Reload(context.Background(), Path(other)); err != nil || !strings.Contains(got.Error, "does not follow") {
		t.Errorf("an agent without a reload: %+v %v", got, err)
	}
}
