//go:build linux

package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// screen collects what the agent writes to its terminal, for waiting on.
type screen struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
	err     error
}

func newScreen(r io.Reader) *screen {
	s := &screen{changed: make(chan struct{})}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			s.mu.Lock()
			s.buf.Write(b[:n])
			if err != nil {
				s.err = err
			}
			close(s.changed)
			s.changed = make(chan struct{})
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return s
}

// waitFor waits until the text written since offset from holds want and returns the
// offset just past it, so that the next wait looks only at what came later.
func (s *screen) waitFor(t *testing.T, from int, want string) int {
	t.Helper()
	deadline := time.After(agentTimeout)
	for {
		s.mu.Lock()
		text := s.buf.String()[from:]
		ch, err := s.changed, s.err
		s.mu.Unlock()
		if i := strings.Index(text, want); i >= 0 {
			return from + i + len(want)
		}
		if err != nil {
			t.Fatalf("the terminal closed (%v) before %q appeared; since the mark:\n%q", err, want, text)
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%q did not appear within %s; since the mark:\n%q", want, agentTimeout, text)
		}
	}
}

// TestShellOnTerminal drives `yuzu-agent shell` through a pseudo-terminal as a person
// would: Tab completes a plugin and an action, a command answers, a crashing plugin
// shows a crash line and a restart line as they happen, Ctrl-C cancels a running
// command and the shell goes on, the up key brings back the history, and Ctrl-D
// leaves with the status of the last command. The history file is 0600.
func TestShellOnTerminal(t *testing.T) {
	t.Parallel()
	w := newWorld(t, tagsBin, crasherBin, sleeperBin)
	ctx, cancel := context.WithTimeout(context.Background(), 3*agentTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath(agentBin), "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "shell")
	cmd.Env = append(baseEnv(), "TERM=xterm")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	scr := newScreen(tty)
	typ := func(keys string) {
		t.Helper()
		if _, err := tty.Write([]byte(keys)); err != nil {
			t.Fatal(err)
		}
	}

	at := scr.waitFor(t, 0, "Ctrl-D to leave.")
	at = scr.waitFor(t, at, "yuzu> ")

	// Tab: a unique plugin, then a unique action.
	typ("ta\t")
	at = scr.waitFor(t, at, "tags ")
	typ("cou\t")
	at = scr.waitFor(t, at, "tags count ")
	typ("\r")
	at = scr.waitFor(t, at, "count|0\r\n[result_status] ")
	at = scr.waitFor(t, at, "yuzu> ")

	// Tab on a word with several endings lists them.
	typ("crasher \t")
	at = scr.waitFor(t, at, "crash  kill  log  ok  panic")
	typ("\x15") // Ctrl-U: drop the line

	// A crash: the command's own error, and the notices from the supervisor.
	// The notices come from the supervisor's own goroutine, so the crash notice may be
	// on the screen before the command's rows (it was, once): both are looked for
	// from before the command.
	typ("crasher crash\r")
	before := at
	at = scr.waitFor(t, before, "before|crash")
	crashed := scr.waitFor(t, before, "[plugin crasher] crashed: exited unexpectedly")
	scr.waitFor(t, crashed, "[plugin crasher] restarted")
	typ("crasher ok\r")
	at = scr.waitFor(t, at, "ok|crasher")

	// Ctrl-C cancels the running command, once it surely runs.
	started := filepath.Join(t.TempDir(), "started")
	typ("sleeper sleep_ctx seconds=600 started=" + started + "\r")
	waitForFile(t, started)
	typ("\x03")
	at = scr.waitFor(t, at, "command cancelled")
	at = scr.waitFor(t, at, "yuzu> ")

	// Ctrl-C on a half-typed line abandons it; the shell goes on.
	typ("tags get key=x\x03")
	at = scr.waitFor(t, at, "^C")
	at = scr.waitFor(t, at, "yuzu> ")

	// The up key walks the history, newest first.
	typ("\x1b[A\x1b[A")
	at = scr.waitFor(t, at, "crasher ok")
	typ("\x15tags count\r")
	at = scr.waitFor(t, at, "count|0")
	at = scr.waitFor(t, at, "yuzu> ")

	typ("\x04")
	err = cmd.Wait()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatal(err)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the shell exited %d after a last command that succeeded, want 0\n%q", code, scr.buf.String()[at:])
	}

	hist := filepath.Join(w.dataDir, "shell_history")
	fi, err := os.Stat(hist)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", hist, fi.Mode().Perm())
	}
	got := readFile(t, hist)
	want := "tags count\ncrasher crash\ncrasher ok\nsleeper sleep_ctx seconds=600 started=" + started + "\ntags count\n"
	if got != want {
		t.Errorf("history file:\n%q\nwant (the abandoned line left out):\n%q", got, want)
	}
}

// waitForFile waits until path exists.
func waitForFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(agentTimeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within %s", path, agentTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestShellFromPipe feeds `yuzu-agent shell` a script on stdin: each line answers as
// `exec` would (definition ids too), a bad line is named on stderr and the next runs,
// a crash is reported on stderr as it happens, and the exit status is the last
// command's.
func TestShellFromPipe(t *testing.T) {
	t.Parallel()
	w := newWorld(t, tagsBin, crasherBin)
	script := strings.Join([]string{
		"tags set key=env value=prod",
		"# a comment",
		`device.tags.get key=env`,
		`tags set key=note value='two words'`,
		`tags get key="note"`,
		`tags get key="open`,
		"crasher crash",
		"crasher ok",
		".nosuch",
		"tags get key=missing",
		".output jsonl",
		"tags count",
	}, "\n") + "\n"
	ctx, cancel := context.WithTimeout(context.Background(), agentTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath(agentBin), "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "shell")
	cmd.Env = baseEnv()
	cmd.Stdin = strings.NewReader(script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatal(err)
	}
	r := run{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
	wantOut := "tag_set|env|prod\n" + undeclared +
		"tag|env|prod\n" + undeclared +
		"tag_set|note|two words\n" + undeclared +
		"tag|note|two words\n" + undeclared
	if !strings.HasPrefix(r.stdout, wantOut) {
		t.Errorf("stdout does not start with the first four answers:\n%s", r)
	}
	// .output switches the later answers to exec's --output formats.
	for _, want := range []string{"before|crash\n", "ok|crasher\n", "tag|missing|\n" + undeclared,
		`{"kind":"count","fields":{"count":"2"}}` + "\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r)
		}
	}
	if strings.Contains(r.stdout, "open") {
		t.Errorf("the line with an open quote ran:\n%s", r)
	}
	for _, want := range []string{
		`yuzu-agent shell: line 6: a " quote is not closed`,
		"[plugin crasher] crashed: exited unexpectedly",
		"yuzu-agent shell: line 9: unknown shell command .nosuch",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r)
		}
	}
	if r.code != 0 {
		t.Errorf("exit %d after a last command that succeeded:\n%s", r.code, r)
	}
	if _, err := os.Stat(filepath.Join(w.dataDir, "shell_history")); err == nil {
		t.Errorf("a script's lines went into the history file")
	}
}
