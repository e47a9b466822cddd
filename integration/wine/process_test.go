//go:build linux

package wine

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/yuzugo/yuzu/agent/trust"
	"time"
)

// TestWindowsCrashAndHang: a plugin that exits mid-command, or hangs past the
// deadline, costs only its own command, answered with what happened; the agent
// exits normally.
func TestWindowsCrashAndHang(t *testing.T) {
	needWine(t)
	t.Parallel()
	w := newWorld(t, crasherExe, sleeperExe, tagsExe)
	w.expect("before|crash\nerror|plugin crashed: crasher exited during the command (exit status 3)\n"+undeclared+rc1, 1, "crasher", "crash")
	// The deadline covers the plugin's start too: 10 s covers a cold start under Wine on
	// a loaded machine (with 1 s the answer was now and then "waiting for plugin
	// sleeper to start"), and is still far short of the 60 s sleep.
	w.expect("error|plugin timed out after 10s\n"+undeclared+rc1, 1, "--timeout", "10", "sleeper", "sleep", "seconds=60")
	r := w.exec("crasher", "panic")
	if r.code != 1 || !strings.Contains(r.stdout, "crasher was asked to panic") {
		t.Errorf("a panicking handler:\n%s", r)
	}
	w.expect("ok|crasher\n"+undeclared, 0, "crasher", "ok")
	w.expect("count|0\n"+undeclared, 0, "tags", "count")
}

// TestWindowsJobObjectEndsTree: yuzu-agent.exe is killed (abruptly, as by a crash)
// while its plugin has a child that has a child; the kill-on-close job object the
// agent put itself in ends all three. Windows processes are Linux processes under
// Wine, found here by a tag on their command lines.
func TestWindowsJobObjectEndsTree(t *testing.T) {
	needWine(t)
	t.Parallel()
	w := newWorld(t, hostileExe)
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	tag := "yuzu-wine-tree-" + hex.EncodeToString(nonce[:])
	pidfile := filepath.Join(t.TempDir(), "pids")
	if err := os.Chmod(filepath.Dir(pidfile), 0o777); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), exeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, wine64, filepath.Join(env.bin, agentExe),
		"--plugin-dir", winPath(w.pluginDir), "--data-dir", winPath(w.dataDir),
		"exec", "hostile", "spawn", "pidfile="+winPath(pidfile), "tag="+tag)
	cmd.Env = wineEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	defer func() { _ = cmd.Process.Kill(); <-done }()
	var last string
	waitFor(t, "the plugin's child and grandchild", func() bool {
		data, _ := os.ReadFile(pidfile)
		select {
		case <-done:
			t.Fatalf("the agent ended before its plugin's descendants ran: %s", out.String())
		default:
		}
		last = fmt.Sprintf("pidfile %q, descendants %v", data, tagged("child "+tag))
		return strings.Count(string(data), "\n") == 2 && len(tagged("child "+tag)) == 2
	}, &last)
	plugin := winPath(w.pluginDir) + `\` + hostileExe
	if len(tagged(plugin)) != 1 {
		t.Fatalf("plugin process %s not found: %v", plugin, tagged(plugin))
	}
	t.Logf("descendants: %v", tagged("child "+tag))
	// The Windows process dies at once, as in a crash: wineserver then closes its
	// handles, the job's last one among them.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done
	waitFor(t, "the plugin, its child and grandchild to end with the agent", func() bool {
		last = fmt.Sprintf("descendants %v, plugin %v", tagged("child "+tag), tagged(plugin))
		return len(tagged("child "+tag)) == 0 && len(tagged(plugin)) == 0
	}, &last)
}

// tagged lists the processes whose command line contains s.
func tagged(s string) []string {
	var out []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		raw, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		cmdline := strings.ReplaceAll(string(bytes.TrimRight(raw, "\x00")), "\x00", " ")
		if err == nil && strings.Contains(cmdline, s) {
			out = append(out, d.Name()+": "+cmdline)
		}
	}
	return out
}

// waitFor waits, generously, until cond holds.
func waitFor(t *testing.T, what string, cond func() bool, last *string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 60 s for %s; last seen: %s", what, *last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWindowsTamperedPluginRefused: the agent hashes the binary while copying it to
// its private directory and runs the copy only when the hash matches the manifest.
func TestWindowsTamperedPluginRefused(t *testing.T) {
	needWine(t)
	t.Parallel()
	w := newWorld(t, tagsExe)
	p := filepath.Join(w.pluginDir, tagsExe)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x01
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	r := w.exec("tags", "count")
	if r.code == 0 || !strings.Contains(r.stdout, "does not match catalog.json") || strings.Contains(r.stdout, "count|") {
		t.Errorf("a changed plugin binary:\n%s", r)
	}
}

// TestWindowsPluginsAdd: `plugins add` copies a binary into the store, starts it once
// to learn what it says of itself, records it in the catalog, and then it runs.
func TestWindowsPluginsAdd(t *testing.T) {
	needWine(t)
	t.Parallel()
	w := newWorld(t, tagsExe)
	r := w.agent("plugins", "add", winPath(filepath.Join(env.bin, sleeperExe)))
	if r.code != 0 || !strings.HasPrefix(r.stdout, "added sleeper 0.0.1 (sha256 "+env.sums[sleeperExe][:12]+") (new), unsigned") {
		t.Fatalf("plugins add:\n%s", r)
	}
	manifest, err := os.ReadFile(trust.Path(w.pluginDir))
	if c, perr := trust.Parse(manifest); err != nil || perr != nil || c.Entry("sleeper") == nil || c.Entry("sleeper").SHA256 != env.sums[sleeperExe] ||
		c.Entry("sleeper").OS != "windows" || c.Entry("sleeper").File != "store/sleeper/"+env.sums[sleeperExe][:16]+"/"+sleeperExe {
		t.Errorf("catalog after add: %s, %v %v", manifest, err, perr)
	}
	w.expect("ok|sleeper\n"+undeclared, 0, "sleeper", "ok")
	w.expect("count|0\n"+undeclared, 0, "tags", "count")
	// Not a plugin: refused, the dir left as it was.
	r = w.agent("plugins", "add", winPath(filepath.Join(env.fixture, "versioned.exe")))
	if r.code == 0 {
		t.Errorf("plugins add of a non-plugin exe succeeded:\n%s", r)
	}
	if after, _ := os.ReadFile(trust.Path(w.pluginDir)); !bytes.Equal(after, manifest) {
		t.Errorf("a refused add changed the catalog:\n%s", after)
	}
}

// TestWindowsPluginsBoxed: every plugin child runs in a job object of its own with the
// default memory and process limits, and `plugins` shows them. Wine's jobs take no CPU
// rate cap, so the CPU column says none rather than claim a limit; the agent's log says
// why once. (Wine keeps but does not enforce the memory and process limits:
// agent/internal/limits' Windows tests say so by name.)
func TestWindowsPluginsBoxed(t *testing.T) {
	needWine(t)
	t.Parallel()
	w := newWorld(t, tagsExe)
	r := w.agent("plugins")
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if r.code != 0 || len(lines) != 2 {
		t.Fatalf("plugins: want exit 0, a header and one row:\n%s", r)
	}
	row := regexp.MustCompile(`^tags +0\.1\.0 +1 +unsigned +running +0 +- +(?:[0-9]+ MiB|-)/512 MiB +(?:[0-9]+|-)/256 +none +\S+$`)
	if !row.MatchString(lines[1]) {
		t.Errorf("plugins row %q: want the tags child boxed, 512 MiB and 256 processes, CPU none", lines[1])
	}
	if !strings.Contains(r.stderr, "take no CPU rate cap") {
		t.Errorf("plugins: want the log to say why there is no CPU limit:\n%s", r.stderr)
	}
}

// TestWindowsPrivateCopies: a plugin start runs from a private copy in the system's
// temporary directory. Wine 8.0's os.RemoveAll cannot remove a directory with files in
// it (FileDispositionInformationEx is not implemented), so the agent's removal of the
// copy after the child exits fails there and the copy stays, which is what lets this
// test see it; on Windows the removal succeeds.
func TestWindowsPrivateCopies(t *testing.T) {
	needWine(t)
	w := newWorld(t, tagsExe)
	before := privateCopies(tagsExe)
	w.expect("count|0\n"+undeclared, 0, "tags", "count")
	var fresh []string
	for _, a := range privateCopies(tagsExe) {
		if !contains(before, a) {
			fresh = append(fresh, a)
		}
	}
	for _, f := range fresh {
		sum, err := fileSHA256(filepath.Join(f, tagsExe))
		if err != nil || sum != env.sums[tagsExe] {
			t.Errorf("private copy %s: sha256 %s, %v; want the plugin's %s", f, sum, err, env.sums[tagsExe])
		}
		_ = os.RemoveAll(f) // from the Linux side, which can
	}
	if len(fresh) != 1 {
		t.Errorf("one start under Wine left %d private copies of %s, want 1: %v", len(fresh), tagsExe, fresh)
	}
	t.Log("Wine difference (os.RemoveAll): the private copy stays behind after the child exited; on Windows the agent removes it")
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}
