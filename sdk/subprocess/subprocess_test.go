//go:build unix

package subprocess

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRunRejectsBadArgv(t *testing.T) {
	cases := []struct {
		name     string
		argv     []string
		relative bool
	}{
		{"nil argv", nil, false},
		{"empty argv", []string{}, false},
		{"bare name", []string{"sh", "-c", "true"}, true},
		{"dot relative", []string{"./sh"}, true},
		{"relative dir", []string{"bin/sh"}, true},
		{"empty name", []string{""}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Run(context.Background(), Spec{Argv: c.argv})
			if err == nil {
				t.Fatalf("Run(%q) succeeded; want an error", c.argv)
			}
			if res.ToolRan || res.Reason != ReasonSpawnError || res.ExitCode != -1 {
				t.Errorf("result = %+v; want ToolRan false, spawn_error, exit -1", res)
			}
			if got := errors.Is(err, ErrRelativePath); got != c.relative {
				t.Errorf("errors.Is(%v, ErrRelativePath) = %v, want %v", err, got, c.relative)
			}
		})
	}
}

func TestRunMissingTool(t *testing.T) {
	res, err := Run(context.Background(), Spec{Argv: []string{"/nonexistent/yuzu-tool"}})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v; want one wrapping fs.ErrNotExist", err)
	}
	if res.ToolRan || res.Reason != ReasonSpawnError {
		t.Errorf("result = %+v; want ToolRan false, spawn_error", res)
	}
}

func TestRunContextAlreadyDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, Spec{Argv: []string{"/bin/true"}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want context.Canceled", err)
	}
	if res.ToolRan {
		t.Errorf("ToolRan = true for a done context")
	}
}

func TestRunExitCodes(t *testing.T) {
	cases := []struct {
		script string
		reason Reason
		code   int
	}{
		{"exit 0", ReasonExited, 0},
		{"exit 3", ReasonExited, 3},
		{"exit 255", ReasonExited, 255},
		{"kill -KILL $$", ReasonSignaled, -1},
		{"kill -TERM $$", ReasonSignaled, -1},
	}
	for _, c := range cases {
		t.Run(c.script, func(t *testing.T) {
			res, err := Run(context.Background(), Spec{Argv: []string{"/bin/sh", "-c", c.script}})
			if err != nil {
				t.Fatal(err)
			}
			if !res.ToolRan || res.Reason != c.reason || res.ExitCode != c.code || res.TimedOut {
				t.Errorf("result = %+v; want ran, %s, exit %d, not timed out", res, c.reason, c.code)
			}
		})
	}
}

// survivors returns the live (not zombie) processes whose process group is pgid or
// whose pid is in pids. A zombie has exited; it only waits for a parent to reap it.
func survivors(t *testing.T, pgid int, pids ...int) []int {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Fatalf("survivors reads /proc; this test runs on Linux only (GOOS=%s)", runtime.GOOS)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var live []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited while we looked
		}
		// Fields after the command name, which is in parentheses and may hold spaces:
		// state ppid pgrp ...
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		pgrp, _ := strconv.Atoi(f[2])
		if pgrp == pgid {
			live = append(live, pid)
			continue
		}
		for _, p := range pids {
			if p == pid {
				live = append(live, pid)
			}
		}
	}
	return live
}

// awaitNoSurvivors polls until the group and pids are gone, failing after limit.
func awaitNoSurvivors(t *testing.T, limit time.Duration, pgid int, pids ...int) {
	t.Helper()
	end := time.Now().Add(limit)
	for {
		live := survivors(t, pgid, pids...)
		if len(live) == 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("processes still alive %v after the run: group %d, pids %v", limit, pgid, live)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pids parses the whitespace-separated pids a test script echoed.
func pids(t *testing.T, out []byte, want int) []int {
	t.Helper()
	f := strings.Fields(string(out))
	if len(f) != want {
		t.Fatalf("output %q: want %d pids", out, want)
	}
	var ps []int
	for _, s := range f {
		p, err := strconv.Atoi(s)
		if err != nil || p <= 1 {
			t.Fatalf("output %q: bad pid %q", out, s)
		}
		ps = append(ps, p)
	}
	return ps
}

// groupScript starts a background grandchild and a foreground sleep, and prints the
// grandchild's pid, then the shell's own (the group leader).
const groupScript = "sleep 100 & echo $!; echo $$; sleep 100"

func TestRunTimeoutKillsWholeGroup(t *testing.T) {
	const timeout = 500 * time.Millisecond
	start := time.Now()
	res, err := Run(context.Background(), Spec{Argv: []string{"/bin/sh", "-c", groupScript}, Timeout: timeout})
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != ReasonDeadline || !res.TimedOut || !res.ToolRan || res.ExitCode != -1 {
		t.Errorf("result = %+v; want deadline, timed out, exit -1", res)
	}
	if elapsed < timeout || elapsed > timeout+time.Second {
		t.Errorf("Run returned after %v; want between %v and %v", elapsed, timeout, timeout+time.Second)
	}
	ps := pids(t, res.Output, 2)
	awaitNoSurvivors(t, timeout+time.Second-elapsed, ps[1], ps...)
}

func TestRunCancelKillsWholeGroup(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const after = 300 * time.Millisecond
	time.AfterFunc(after, cancel)
	start := time.Now()
	res, err := Run(ctx, Spec{Argv: []string{"/bin/sh", "-c", groupScript}, Timeout: time.Minute})
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != ReasonCancelled || res.TimedOut || !res.ToolRan {
		t.Errorf("result = %+v; want cancelled, not timed out", res)
	}
	if elapsed > after+time.Second {
		t.Errorf("Run returned %v after start; want within 1s of the cancel at %v", elapsed, after)
	}
	ps := pids(t, res.Output, 2)
	awaitNoSurvivors(t, time.Second, ps[1], ps...)
}

func TestRunKillsLeftoversAfterNormalExit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Fatalf("leftover cleanup after a normal exit is Linux-only (GOOS=%s)", runtime.GOOS)
	}
	start := time.Now()
	res, err := Run(context.Background(), Spec{Argv: []string{"/bin/sh", "-c", "sleep 100 & echo $!; echo $$; exit 4"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != ReasonExited || res.ExitCode != 4 {
		t.Errorf("result = %+v; want exited 4", res)
	}
	// The background sleep holds the output pipe; had it survived, Run would have
	// waited the whole pipe grace.
	if elapsed := time.Since(start); elapsed >= pipeGrace {
		t.Errorf("Run took %v; the leftover was not killed at once", elapsed)
	}
	ps := pids(t, res.Output, 2)
	awaitNoSurvivors(t, time.Second, ps[1], ps...)
}

func TestRunOutputCap(t *testing.T) {
	cases := []struct {
		name      string
		write     int
		max       int
		wantLen   int
		truncated bool
	}{
		{"under cap", 999, 1000, 999, false},
		{"exactly cap", 1000, 1000, 1000, false},
		{"one over", 1001, 1000, 1000, true},
		{"far over small cap", 3_000_000, 1000, 1000, true},
		{"default cap", 2_500_000, 0, DefaultMaxOutput, true},
		{"default cap not reached", DefaultMaxOutput, 0, DefaultMaxOutput, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			script := "head -c " + strconv.Itoa(c.write) + " /dev/zero | tr '\\0' x"
			res, err := Run(context.Background(), Spec{Argv: []string{"/bin/sh", "-c", script}, MaxOutput: c.max})
			if err != nil {
				t.Fatal(err)
			}
			// exited 0 proves the writer was drained to the end rather than blocked
			// on a full pipe and killed.
			if res.Reason != ReasonExited || res.ExitCode != 0 {
				t.Errorf("result reason %s exit %d; want exited 0", res.Reason, res.ExitCode)
			}
			if len(res.Output) != c.wantLen || res.OutputTruncated != c.truncated {
				t.Errorf("got %d bytes truncated=%v; want %d truncated=%v", len(res.Output), res.OutputTruncated, c.wantLen, c.truncated)
			}
			if strings.Trim(string(res.Output), "x") != "" {
				t.Errorf("output holds bytes other than the tool's")
			}
		})
	}
}

func TestRunMergeStderr(t *testing.T) {
	script := "echo out1; echo err1 >&2; echo out2; echo err2 >&2"
	cases := []struct {
		merge bool
		want  string
	}{
		{false, "out1\nout2\n"},
		{true, "out1\nerr1\nout2\nerr2\n"},
	}
	for _, c := range cases {
		res, err := Run(context.Background(), Spec{Argv: []string{"/bin/sh", "-c", script}, MergeStderr: c.merge})
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Output) != c.want {
			t.Errorf("MergeStderr=%v: output %q, want %q", c.merge, res.Output, c.want)
		}
	}
}

func TestRunEnvironment(t *testing.T) {
	t.Setenv("YUZU_TEST_SECRET", "must-not-leak")
	t.Setenv("HOME", "/root/must-not-leak")
	t.Setenv("TZ", "Europe/Paris")
	cases := []struct {
		name string
		env  []string
		want []string
	}{
		{"default", nil, []string{"LANG=C", "LC_ALL=C", "PATH=" + defaultPath, "TZ=Europe/Paris"}},
		{"explicit", []string{"A=1", "B=two words"}, []string{"A=1", "B=two words"}},
		{"empty", []string{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Run(context.Background(), Spec{Argv: []string{"/usr/bin/env"}, Env: c.env})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range strings.Split(strings.TrimSuffix(string(res.Output), "\n"), "\n") {
				if l != "" {
					got = append(got, l)
				}
			}
			sort.Strings(got)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("env = %q, want %q", got, c.want)
			}
		})
	}
}

func TestDefaultEnvWithoutTZ(t *testing.T) {
	t.Setenv("TZ", "")
	os.Unsetenv("TZ")
	want := []string{"PATH=" + defaultPath, "LC_ALL=C", "LANG=C"}
	if got := DefaultEnv(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("DefaultEnv() = %q, want %q", got, want)
	}
}

func TestRunWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		dir  string
		want string
	}{
		{"", "/\n"},
		{dir, dir + "\n"},
	}
	for _, c := range cases {
		res, err := Run(context.Background(), Spec{Argv: []string{"/bin/sh", "-c", "pwd -P"}, Dir: c.dir})
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Output) != c.want {
			t.Errorf("Dir %q: pwd printed %q, want %q", c.dir, res.Output, c.want)
		}
	}
}

func TestRunNoShellInterpretation(t *testing.T) {
	// Arguments reach the tool verbatim: nothing expands `$HOME` or splits on `;`.
	arg := "$HOME; echo injected"
	res, err := Run(context.Background(), Spec{Argv: []string{"/bin/echo", arg}})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Output) != arg+"\n" {
		t.Errorf("echo printed %q, want %q", res.Output, arg+"\n")
	}
}

func TestRunDefaultTimeoutApplies(t *testing.T) {
	// A negative timeout means the default, not "already expired".
	res, err := Run(context.Background(), Spec{Argv: []string{"/bin/true"}, Timeout: -time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != ReasonExited || res.ExitCode != 0 {
		t.Errorf("result = %+v; want exited 0", res)
	}
}

// Complete: only a tool that exited by itself with all of its output counts, whatever
// its exit status.
func TestResultComplete(t *testing.T) {
	cases := []struct {
		name string
		res  Result
		want bool
	}{
		{"exit 0", Result{ToolRan: true, Reason: ReasonExited}, true},
		{"exit 3", Result{ToolRan: true, Reason: ReasonExited, ExitCode: 3}, true},
		{"output cut at the cap", Result{ToolRan: true, Reason: ReasonExited, OutputTruncated: true}, false},
		{"killed at its deadline", Result{ToolRan: true, Reason: ReasonDeadline, TimedOut: true, ExitCode: -1}, false},
		{"cancelled", Result{ToolRan: true, Reason: ReasonCancelled, ExitCode: -1}, false},
		{"killed by someone else", Result{ToolRan: true, Reason: ReasonSignaled, ExitCode: -1}, false},
		{"never started", Result{Reason: ReasonSpawnError, ExitCode: -1}, false},
		{"zero value", Result{}, false},
	}
	for _, c := range cases {
		if got := c.res.Complete(); got != c.want {
			t.Errorf("%s: Complete() = %v, want %v", c.name, got, c.want)
		}
	}
	res, err := Run(context.Background(), Spec{Argv: []string{"/no/such/tool"}})
	if err == nil || res.Complete() {
		t.Errorf("a tool that cannot start: %+v, %v", res, err)
	}
}
