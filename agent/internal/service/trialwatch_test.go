//go:build !windows

package service

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/agent/update"
)

// watchTree is a tree with 1.0.0 switched to from 0.9.0, its trial recorded.
func watchTree(t *testing.T) (update.Tree, string) {
	t.Helper()
	tr := update.Tree{Root: filepath.Join(t.TempDir(), "agent"), GOOS: "linux"}
	for _, v := range []string{"0.9.0", "1.0.0"} {
		if err := os.MkdirAll(filepath.Join(tr.Root, v), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(tr.Binary(v), []byte(v), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("0.9.0", filepath.Join(tr.Root, update.CurrentLink)); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state.json")
	if err := update.StartTrial(state, "1.0.0", "0.9.0", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := tr.Switch("1.0.0"); err != nil {
		t.Fatal(err)
	}
	return tr, state
}

// TestWatchTrial: the Windows watchdog, against the in-memory SCM. The new version
// registers: kept. The new version stops before it registers: the previous version is
// put back and started, once.
func TestWatchTrial(t *testing.T) {
	ctx := context.Background()
	// Kept: the agent confirms once the service runs.
	tr, state := watchTree(t)
	scm := &fakeSCM{installed: true, name: Name, state: SCMStopPending}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			scm.mu.Lock()
			running := scm.state == SCMRunning
			scm.mu.Unlock()
			if running {
				if _, err := update.Confirm(state, "1.0.0", time.Now()); err != nil {
					t.Error(err)
				}
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var out bytes.Buffer
	if err := WatchTrial(ctx, scm, tr, state, time.Millisecond, &out); err != nil {
		t.Fatalf("kept: %v\n%s", err, out.String())
	}
	<-done
	if cur, _ := tr.Current(); cur != "1.0.0" || !strings.Contains(out.String(), "1.0.0 starts on trial") || !strings.Contains(out.String(), "passed its trial") {
		t.Errorf("kept: current %s\n%s", cur, out.String())
	}

	// Rolled back: the service stops before the version registers.
	tr, state = watchTree(t)
	scm = &fakeSCM{installed: true, name: Name, state: SCMStopped}
	go func() {
		for {
			scm.mu.Lock()
			if scm.state == SCMRunning {
				scm.state = SCMStopped // it exits at start
				scm.mu.Unlock()
				return
			}
			scm.mu.Unlock()
			time.Sleep(time.Millisecond)
		}
	}()
	out.Reset()
	if err := WatchTrial(ctx, scm, tr, state, time.Millisecond, &out); err != nil {
		t.Fatalf("rolled back: %v\n%s", err, out.String())
	}
	if cur, _ := tr.Current(); cur != "0.9.0" || !strings.Contains(out.String(), "rolled back from 1.0.0 to 0.9.0") {
		t.Errorf("rolled back: current %s\n%s", cur, out.String())
	}
	if starts := strings.Count(strings.Join(scm.calls, " "), "start"); starts != 2 {
		t.Errorf("the service was started %d times (%v), want the trial and the previous version", starts, scm.calls)
	}
}
