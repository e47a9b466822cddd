//go:build linux

package integration

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/agent/trust"
)

// TestExecPluginFailures: a plugin that crashes, panics or hangs during a command ends
// that command honestly (docs/agent.md); rows it sent before stay in the answer.
func TestExecPluginFailures(t *testing.T) {
	t.Parallel()
	w := newWorld(t, crasherBin, sleeperBin)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"exit", []string{"crasher", "crash"}, "before|crash\n" + agentError("plugin crashed: crasher exited during the command (exit status 3)")},
		{"sigkill", []string{"crasher", "kill"}, "before|kill\n" + agentError("plugin crashed: crasher exited during the command (killed by signal 9 (killed))")},
		// A panic is caught by the SDK: the plugin answers, it does not die.
		{"panic", []string{"crasher", "panic"}, "error|plugin panicked in panic: crasher was asked to panic\n" + undeclared + rc1},
		// The deadline covers the plugin's start too, so it is long enough for a cold
		// start on a loaded machine: these cases are about the run.
		{"hang past the deadline", []string{"--timeout", "8", "sleeper", "sleep", "seconds=60"}, agentError("plugin timed out after 8s")},
		// A handler that honours its context ends by itself at the deadline.
		{"context deadline", []string{"--timeout", "8s", "sleeper", "sleep_ctx", "seconds=60"}, "error|cancelled: context deadline exceeded\n" + undeclared + rc1},
		{"ok", []string{"crasher", "ok"}, "ok|crasher\n" + undeclared},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w.expect(c.want, 1-boolInt(c.name == "ok"), c.args...)
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestExecPluginEnvironment: the plugin child inherits only the allow-list of
// docs/agent.md (plus what go-plugin itself passes for the handshake).
func TestExecPluginEnvironment(t *testing.T) {
	t.Parallel()
	w := newWorld(t, sleeperBin)
	env := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=/home/test",
		"LANG=C.UTF-8",
		"LC_TIME=en_GB.UTF-8",
		"TZ=Europe/Paris",
		"USER=tester",
		"YUZU_SECRET_TOKEN=hunter2",
		"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI",
		"LD_PRELOAD=/nonexistent.so",
		"YUZU_PLUGIN_DIR=" + w.pluginDir,
		"YUZU_DATA_DIR=" + w.dataDir,
	}
	r := runAgent(t, env, "exec", "sleeper", "env")
	if r.code != 0 || !strings.HasSuffix(r.stdout, undeclared) {
		t.Fatalf("exec sleeper env:\n%s", r)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(r.stdout, undeclared), "\n") {
		if line == "" {
			continue
		}
		kind, rest, _ := strings.Cut(line, "|")
		k, v, _ := strings.Cut(rest, "|")
		if kind != "env" {
			t.Fatalf("unexpected row %q", line)
		}
		got[k] = v
	}
	for _, kv := range env[:6] {
		k, v, _ := strings.Cut(kv, "=")
		if got[k] != v {
			t.Errorf("plugin environment: %s = %q, want %q", k, got[k], v)
		}
	}
	allowed := map[string]bool{
		"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "TMPDIR": true, "TMP": true, "TEMP": true,
		"LANG": true, "LC_ALL": true, "TZ": true, "DBUS_SYSTEM_BUS_ADDRESS": true,
		"YUZU_PLUGIN_MAGIC_COOKIE": true, // go-plugin's handshake
		"YUZU_PLUGIN_CGROUP":       true, // the child's own box (docs/agent.md "Resource limits")
	}
	for k := range got {
		switch {
		case allowed[k], strings.HasPrefix(k, "LC_"), strings.HasPrefix(k, "PLUGIN_"): // PLUGIN_*: go-plugin's own
		default:
			t.Errorf("plugin environment has %s=%q, which is not on the allow-list", k, got[k])
		}
	}
	for _, secret := range []string{"YUZU_SECRET_TOKEN", "AWS_SECRET_ACCESS_KEY", "LD_PRELOAD"} {
		if _, leaked := got[secret]; leaked {
			t.Errorf("%s reached the plugin", secret)
		}
	}
}

// TestAgentKilledLeavesNoChild: after SIGKILL of the agent during a command, its
// plugin child is gone within 2 s (ARCHITECTURE: no orphans, ever).
func TestAgentKilledLeavesNoChild(t *testing.T) {
	t.Parallel()
	w := newWorld(t, sleeperBin)
	plugin := filepath.Join(w.pluginDir, sleeperBin)
	ctx, cancel := context.WithTimeout(context.Background(), agentTimeout)
	defer cancel()
	started := startMarker(t)
	cmd := exec.CommandContext(ctx, binPath(agentBin), "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "exec", "sleeper", "sleep", "seconds=60", "started="+started)
	cmd.Env = baseEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	agentPid := cmd.Process.Pid
	var child int
	for deadline := time.Now().Add(30 * time.Second); child == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("no plugin child of agent %d appeared\nstderr:\n%s", agentPid, stderr.String())
		}
		for _, pid := range childrenOf(agentPid) {
			if runs(pid, plugin) {
				child = pid
			}
		}
	}
	// The kill lands mid-command.
	waitStarted(t, started)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed := time.Now()
	for alive(child) || len(processesOf(plugin)) > 0 {
		if time.Since(killed) > 2*time.Second {
			t.Fatalf("plugin child %d (%s) still alive 2 s after the agent was killed; processes running %s: %v",
				child, procState(child), plugin, processesOf(plugin))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("plugin child %d gone %s after SIGKILL of agent %d", child, time.Since(killed).Round(time.Millisecond), agentPid)
}

// childrenOf lists the child pids of pid from /proc/<pid>/task/*/children.
func childrenOf(pid int) []int {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	var out []int
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, s := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(s); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// exePath is the binary a process runs, or "" when it is gone (or a zombie).
func exePath(pid int) string {
	p, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return ""
	}
	return p
}

// runs says pid runs the plugin binary at path: the agent executes a sealed memory
// copy of it (docs/agent.md), whose argv[0] is the binary's path.
func runs(pid int, path string) bool {
	exe := exePath(pid)
	if exe == path {
		return true
	}
	if !strings.HasPrefix(exe, "/memfd:") {
		return false
	}
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	argv0, _, _ := strings.Cut(string(b), "\x00")
	return argv0 == path
}

// procState is the one-letter state of a process from /proc/<pid>/stat ("" when gone).
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return "?"
}

// alive reports whether pid is a live process: a zombie has exited and counts as
// gone (whoever adopted it reaps it when it gets round to it).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	st := procState(pid)
	return st != "" && st != "Z" && st != "X"
}

// processesOf lists the live processes running the binary at path.
func processesOf(path string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if runs(pid, path) && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// TestExecInterrupted: SIGINT or SIGTERM to `exec` during a command whose handler
// ignores cancellation ends the command with an error row and exit 1, and leaves no
// plugin process behind.
func TestExecInterrupted(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, sleeperBin)
			plugin := filepath.Join(w.pluginDir, sleeperBin)
			started := startMarker(t)
			cmd := exec.Command(binPath(agentBin), "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "exec", "sleeper", "sleep", "seconds=60", "started="+started)
			cmd.Env = baseEnv()
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill() }()
			waitStarted(t, started)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				t.Fatalf("agent still running 15 s after %s\nstderr:\n%s", sig, stderr.String())
			}
			r := run{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
			if want := agentError("command cancelled: the agent was interrupted"); r.stdout != want || r.code != 1 {
				t.Errorf("after %s: want %q exit 1:\n%s", sig, want, r)
			}
			if left := processesOf(plugin); len(left) > 0 {
				t.Errorf("plugin processes left after the agent exited: %v", left)
			}
		})
	}
}

// TestExecStartFailures: a listed binary that does not start as the plugin its name
// says is reported with the plugin's name and why.
func TestExecStartFailures(t *testing.T) {
	t.Parallel()
	t.Run("binary says another name", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, tagsBin)
		other := filepath.Join(w.pluginDir, "yuzu-plugin-other")
		if err := os.Link(binPath(sleeperBin), other); err != nil {
			t.Fatal(err)
		}
		appendManifest(t, w.pluginDir, built.sums[sleeperBin], "yuzu-plugin-other")
		w.expect(agentError(`plugin other did not start: binary `+other+` says its name is "sleeper"`), 1, "other", "ok")
		w.expect("count|0\n"+undeclared, 0, "tags", "count")
	})
	t.Run("not a plugin", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, tagsBin)
		fake := filepath.Join(w.pluginDir, "yuzu-plugin-fake")
		writeFile(t, fake, "#!/bin/sh\necho not a plugin\nexit 0\n", 0o755)
		sum, err := fileSHA256(fake)
		if err != nil {
			t.Fatal(err)
		}
		appendManifest(t, w.pluginDir, sum, "yuzu-plugin-fake")
		r := w.exec("fake", "x")
		if r.code != 1 || !strings.HasPrefix(r.stdout, "error|plugin fake did not start: ") || !strings.HasSuffix(r.stdout, "\n"+undeclared+rc1) || strings.Count(r.stdout, "\n") != 3 {
			t.Errorf("want one error row saying fake did not start:\n%s", r)
		}
	})
}

// appendManifest pins one more binary of the plugin dir in its catalog.
func appendManifest(t *testing.T, dir, sum, file string) {
	t.Helper()
	c := readCatalog(t, dir)
	name, _ := trust.PluginName(file)
	c.Plugins[name] = &trust.Entry{File: file, SHA256: sum}
	writeFile(t, trust.Path(dir), string(c.Marshal()), 0o644)
}

// TestManifestFormats: the plugins.sha256 of an older agent, as sha256sum writes it
// in text or binary mode, with comments, blank lines and CRLF line ends, is made into
// the catalog at the first start (and said so), and its plugins run.
func TestManifestFormats(t *testing.T) {
	t.Parallel()
	sum := built.sums[tagsBin]
	cases := map[string]string{
		"binary mode":       sum + " *" + tagsBin + "\n",
		"comments and CRLF": "# trusted plugins\r\n\r\n" + sum + "  " + tagsBin + "\r\n",
		"no final newline":  sum + "  " + tagsBin,
		"upper-case hex":    strings.ToUpper(sum) + "  " + tagsBin + "\n",
	}
	for name, manifest := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, tagsBin)
			if err := os.Remove(trust.Path(w.pluginDir)); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(w.pluginDir, "plugins.sha256"), manifest, 0o644)
			r := w.exec("tags", "count")
			if r.code != 0 || r.stdout != "count|0\n"+undeclared || !strings.Contains(r.stderr, "was made from plugins.sha256 (1 plugins") {
				t.Errorf("the first start:\n%s", r)
			}
			if e := readCatalog(t, w.pluginDir).Entry("tags"); e == nil || e.SHA256 != sum || e.File != tagsBin {
				t.Errorf("migrated entry %+v", e)
			}
			if _, err := os.Stat(filepath.Join(w.pluginDir, "plugins.sha256.migrated")); err != nil {
				t.Errorf("the old manifest was not kept aside: %v", err)
			}
			// Said once: the next start reads the catalog.
			if r := w.exec("tags", "count"); r.code != 0 || strings.Contains(r.stderr, "plugins.sha256") {
				t.Errorf("the second start:\n%s", r)
			}
		})
	}
}
