//go:build linux

package integration

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/integration/fleetserver"
)

// The box tests check the plugins' resource limits (docs/agent.md "Resource limits")
// with the hog test plugin: a plugin over its memory limit, a fork bomb, and a
// process that double-forked into a session of its own when the agent is killed.

// needBoxes skips the test, saying why, when the agent says it could not apply what
// the test needs (no cgroup with that controller: not root, no delegation).
func needBoxes(t *testing.T, log string, what ...string) {
	t.Helper()
	const unavailable = "plugin resource limits are not (all) applied"
	i := strings.Index(log, unavailable)
	if i < 0 {
		return
	}
	line, _, _ := strings.Cut(log[i:], "\n")
	for _, w := range what {
		if strings.Contains(line, w) {
			noBoxes(t, "this machine cannot box plugins (%s): %s", w, line)
		}
	}
}

// boxesRequiredEnv, set to 1, turns every "cannot box here" skip into a failure: the
// cgroup v2 virtual machine (scripts/test-cgroup2.sh) has every controller, so a
// test there that finds none found a bug.
const boxesRequiredEnv = "YUZU_BOXES_REQUIRED"

// noBoxes skips the test, or fails it where boxes are required, saying why.
func noBoxes(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv(boxesRequiredEnv) == "1" {
		t.Fatalf("boxes are required here ("+boxesRequiredEnv+"=1), but "+format, args...)
	}
	t.Skipf(format, args...)
}

// freeAddr returns a loopback address no one listens on.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// metric returns the value of one series on the agent's metrics page.
func metric(addr, series string) (float64, bool) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}

// TestBoxMemoryLimit: a plugin that allocates 2 GiB is killed at its 512 MiB limit
// and the command says so; the kill counts as a crash (a restart), the plugin comes
// back, and the agent and the other plugin keep serving. The metrics page shows the
// limits and peaks.
func TestBoxMemoryLimit(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, tagsBin, hogBin)
	addr := freeAddr(t)
	a := f.agent("--metrics-listen", addr)
	needBoxes(t, a.stderr.String(), "memory")
	ctx := testCtx(t, 120*time.Second)
	expectResult(t, f.do(t, ctx, command("small", "hog", "alloc", "mib=64")), success, 0, "allocated|64")
	expectResult(t, f.do(t, ctx, command("before", "tags", "count")), success, 0, "count|0")
	// Restarts are counted from here: on a slow machine (the QEMU leg under load) a
	// plugin's first start can miss its deadline and be restarted before any
	// command, which is not what this test is about.
	hogBefore, _ := metric(addr, `yuzu_agent_plugin_restarts_total{plugin="hog"}`)
	tagsBefore, _ := metric(addr, `yuzu_agent_plugin_restarts_total{plugin="tags"}`)
	expectResult(t, f.do(t, ctx, command("big", "hog", "alloc", "mib=2048")), failure, 1,
		"error|plugin exceeded its memory limit (512 MiB)")
	expectResult(t, f.do(t, ctx, command("count", "tags", "count")), success, 0, "count|0")
	expectResult(t, f.do(t, ctx, command("back", "hog", "ok")), success, 0, "ok|hog")
	if v, ok := metric(addr, `yuzu_agent_plugin_restarts_total{plugin="hog"}`); !ok || v-hogBefore != 1 {
		t.Errorf("hog restarts %v (%v), %v before the kill, want 1 more: the memory kill counts as a crash", v, ok, hogBefore)
	}
	if v, _ := metric(addr, `yuzu_agent_plugin_restarts_total{plugin="tags"}`); v != tagsBefore {
		t.Errorf("tags restarts %v, %v before the kill, want no more", v, tagsBefore)
	}
	for _, p := range []string{"hog", "tags"} {
		if v, ok := metric(addr, `yuzu_agent_plugin_memory_limit_bytes{plugin="`+p+`"}`); !ok || v != 512<<20 {
			t.Errorf("%s memory limit on the metrics page: %v (%v)", p, v, ok)
		}
		if v, ok := metric(addr, `yuzu_agent_plugin_tasks_limit{plugin="`+p+`"}`); !ok || v != 256 {
			t.Errorf("%s task limit on the metrics page: %v (%v)", p, v, ok)
		}
		if v, ok := metric(addr, `yuzu_agent_plugin_memory_peak_bytes{plugin="`+p+`"}`); !ok || v <= 0 || v > 512<<20 {
			t.Errorf("%s memory peak on the metrics page: %v (%v)", p, v, ok)
		}
	}
	if code := a.stop(t); code != 0 {
		t.Errorf("agent exit %d", code)
	}
}

// TestBoxMemoryLimitExec: the same through exec, with the limit set per plugin.
func TestBoxMemoryLimitExec(t *testing.T) {
	t.Parallel()
	w := newWorld(t, tagsBin, hogBin)
	r := w.exec("hog", "alloc", "mib=400", "--plugin-limits", "hog:memory_mib=256")
	needBoxes(t, r.stderr, "memory")
	if r.stdout != agentError("plugin exceeded its memory limit (256 MiB)") || r.code != 1 {
		t.Errorf("over a 256 MiB limit: %s", r)
	}
	// The same allocation within the default limit.
	if r := w.exec("hog", "alloc", "mib=400"); r.code != 0 || !strings.HasPrefix(r.stdout, "allocated|400\n") {
		t.Errorf("within the default limit: %s", r)
	}
	plugins := func(args ...string) run {
		return runAgent(t, nil, append([]string{"--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "plugins"}, args...)...)
	}
	if r := plugins("--plugin-limits", "*:memory_mib=128,tasks=100;tags:cpus=0.5"); r.code != 0 ||
		!regexp.MustCompile(`(?m)^hog .* [0-9-]+ MiB/128 MiB +[0-9-]+/100 +1 `).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^tags .* [0-9-]+ MiB/128 MiB +[0-9-]+/100 +0\.5 `).MatchString(r.stdout) {
		t.Errorf("plugins does not show the limits given: %s", r)
	}
	if r := plugins("--plugin-limits", "hog:memory_mib=lots"); r.code != 2 || !strings.Contains(r.stderr, "memory_mib") {
		t.Errorf("a bad limit is not refused: %s", r)
	}
}

// tagged counts the processes whose command line holds tag.
func tagged(tag string) int {
	des, _ := os.ReadDir("/proc")
	n := 0
	for _, de := range des {
		if _, err := strconv.Atoi(de.Name()); err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + de.Name() + "/cmdline")
		if strings.Contains(string(b), tag) {
			n++
		}
	}
	return n
}

// TestBoxForkBomb: a fork bomb in a plugin is held at its task limit while the agent
// and the other plugin keep serving, and nothing of it is left once the agent has
// stopped the plugin.
func TestBoxForkBomb(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, tagsBin, hogBin)
	addr := freeAddr(t)
	const limit = 64
	a := f.agent("--metrics-listen", addr, "--plugin-limits", fmt.Sprintf("hog:tasks=%d", limit))
	needBoxes(t, a.stderr.String(), "pids")
	ctx := testCtx(t, 120*time.Second)
	tag := fmt.Sprintf("yuzu-bomb-%d", time.Now().UnixNano())
	r := f.do(t, ctx, command("bomb", "hog", "forkbomb", "tag="+tag))
	if r.Terminal.GetStatus() != success {
		t.Fatalf("the bomb did not start: %+v", r)
	}
	most := 0
	waitFor(t, 60*time.Second, "forks refused at the task limit", func() bool {
		most = max(most, tagged(tag))
		v, _ := metric(addr, `yuzu_agent_plugin_tasks_refused_total{plugin="hog"}`)
		return v > 0
	})
	for range 20 {
		most = max(most, tagged(tag))
	}
	// The refused forks prove the bomb ran into the limit. Its processes are only
	// sampled: a bomb whose every fork is refused can burn out (each shell exits when
	// its fork fails) before the first look, which once saw none of it (1 run in 6).
	if most > limit {
		t.Errorf("%d processes of the bomb seen at once, want at most %d", most, limit)
	}
	peak, ok := metric(addr, `yuzu_agent_plugin_tasks_peak{plugin="hog"}`)
	if ok && peak > limit {
		t.Errorf("the box's task peak %v, want at most %d", peak, limit)
	}
	t.Logf("at most %d processes of the bomb seen at once; the box's task peak %v (%v); limit %d", most, peak, ok, limit)
	if v, ok := metric(addr, `yuzu_agent_plugin_tasks{plugin="hog"}`); !ok || v > limit {
		t.Errorf("tasks in the box %v (%v), want at most %d", v, ok, limit)
	}
	expectResult(t, f.do(t, ctx, command("count", "tags", "count")), success, 0, "count|0")
	if code := a.stop(t); code != 0 {
		t.Errorf("agent exit %d", code)
	}
	waitFor(t, 10*time.Second, "the bomb's processes to be gone", func() bool { return tagged(tag) == 0 })
}

// gone says pid no longer runs a sleep with the given command line (exited, reaped or
// a zombie no one reaps).
func gone(pid int, cmdline string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err != nil || strings.ReplaceAll(string(b), "\x00", " ") != cmdline
}

// TestBoxEndsEscapedAfterAgentKill: a process that double-forked into a session of its
// own (its parent gone, outside the plugin's process group) is gone once the agent is
// SIGKILLed: it is still in the plugin's box, which the plugin ends as the agent dies.
// Before boxes it lived on (docs/agent.md named the gap).
func TestBoxEndsEscapedAfterAgentKill(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, hogBin)
	a := f.agent()
	needBoxes(t, a.stderr.String(), "cgroup v2")
	ctx := testCtx(t, 60*time.Second)
	const seconds = "3171"
	r := f.do(t, ctx, command("escape", "hog", "escape", "seconds="+seconds))
	if r.Terminal.GetStatus() != success || len(r.Rows) != 1 {
		t.Fatalf("escape: %+v", r)
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(r.Rows[0], "escaped|"))
	if err != nil {
		t.Fatalf("row %q", r.Rows[0])
	}
	cmdline := "/bin/sleep " + seconds + " "
	if gone(pid, cmdline) {
		t.Fatalf("the escaped sleep %d is not running", pid)
	}
	t.Cleanup(func() {
		if !gone(pid, cmdline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.wait(t, 10*time.Second)
	waitFor(t, 20*time.Second, "the escaped sleep to be gone after the agent's SIGKILL", func() bool { return gone(pid, cmdline) })
}

// ownV2 returns the cgroup v2 mount point and this process's cgroup directory in it,
// or skips the test saying why there is none to test in.
func ownV2(t *testing.T) (mountDir, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		noBoxes(t, "making cgroups needs root")
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mi), "\n") {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS... - TYPE SOURCE SUPER
		pre, post, ok := strings.Cut(line, " - ")
		if f := strings.Fields(pre); ok && len(f) >= 5 && strings.HasPrefix(post, "cgroup2 ") && f[3] == "/" {
			mountDir = f[4]
			break
		}
	}
	if mountDir == "" {
		noBoxes(t, "no cgroup v2 hierarchy is mounted (with its root) here")
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(own), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return mountDir, filepath.Join(mountDir, p)
		}
	}
	noBoxes(t, "this process has no cgroup v2 entry in /proc/self/cgroup")
	return "", ""
}

// serviceCgroup makes a fresh cgroup v2 child of this process's cgroup, as a service
// manager makes one per service, with every box controller the parent can give it,
// and returns it open for UseCgroupFD. It is removed when the test ends.
func serviceCgroup(t *testing.T, parent, name string) (string, int) {
	t.Helper()
	dir := filepath.Join(parent, fmt.Sprintf("%s-%d-%d", name, os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		noBoxes(t, "cannot make a cgroup in %s: %v", parent, err)
	}
	for _, c := range []string{"memory", "cpu", "pids"} {
		// Refused where the parent holds processes itself or lacks the controller:
		// the agent then finds fewer controllers, which the test reads below.
		_ = os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+"+c), 0)
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Close(fd)
		// cgroup.kill ends whatever a failed test left anywhere in the tree; each
		// directory, leaves first, can be removed once its processes are gone (EBUSY
		// until then), and the agent may have removed its own already.
		_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
		var dirs []string
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		deadline := time.Now().Add(10 * time.Second)
		for i := len(dirs) - 1; i >= 0; i-- {
			for {
				err := os.Remove(dirs[i])
				if err == nil || errors.Is(err, fs.ErrNotExist) {
					break
				}
				if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
					t.Errorf("removing the test's cgroup: %v", err)
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	})
	return dir, fd
}

// runInCgroup runs the agent with args, forked straight into the cgroup open as fd.
func runInCgroup(t *testing.T, fd int, args ...string) run {
	t.Helper()
	return runAgentAttr(t, nil, &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}, args...)
}

// TestBoxDelegatedCgroup: an agent alone in a cgroup of its own (what systemd's
// Delegate=yes gives a service) moves itself into a leaf of it, hands its controllers
// down and boxes its plugins beside that leaf, so a plugin over its memory limit is
// killed there; an agent that shares its cgroup says so and still serves.
func TestBoxDelegatedCgroup(t *testing.T) {
	mountDir, parent := ownV2(t)
	w := newWorld(t, tagsBin, hogBin)
	args := func(more ...string) []string {
		return append([]string{"--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "--log-level", "debug", "exec"}, more...)
	}
	t.Run("alone", func(t *testing.T) {
		svc, fd := serviceCgroup(t, parent, "yuzu-test-service")
		given, _ := os.ReadFile(filepath.Join(svc, "cgroup.controllers"))
		r := runInCgroup(t, fd, args("hog", "alloc", "mib=2048")...)
		needBoxes(t, r.stderr, "memory")
		if r.stdout != agentError("plugin exceeded its memory limit (512 MiB)") || r.code != 1 {
			t.Errorf("a 2 GiB allocation in the delegated cgroup: %s", r)
		}
		// The boxes' directory is beside the agent's leaf, with what it was given.
		var in []string
		for _, c := range []string{"memory", "cpu", "pids"} {
			if slices.Contains(strings.Fields(string(given)), c) {
				in = append(in, c)
			}
		}
		where := "v2 " + filepath.Join(svc, "plugins-1") + " (" + strings.Join(in, ",") + ")"
		if !strings.Contains(r.stderr, where) {
			t.Errorf("the log does not place the boxes at %q:\n%s", where, r.stderr)
		}
		if _, err := os.Stat(filepath.Join(svc, "yuzu-agent")); err != nil {
			t.Errorf("the agent did not move into its leaf: %v", err)
		}
		left, _ := filepath.Glob(filepath.Join(svc, "plugins-*"))
		if len(left) != 0 {
			t.Errorf("boxes left after the agent ended: %v", left)
		}
		t.Logf("cgroup v2 at %s; the service cgroup was given %q; boxes: %s", mountDir, strings.TrimSpace(string(given)), where)
	})
	t.Run("shared", func(t *testing.T) {
		svc, fd := serviceCgroup(t, parent, "yuzu-test-shared")
		other := exec.Command("/bin/sleep", "60")
		other.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
		if err := other.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
		r := runInCgroup(t, fd, args("tags", "count")...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "count|0\n") {
			t.Errorf("tags count beside another process: %s", r)
		}
		if want := "the agent shares its cgroup " + svc + " with 1 other processes"; !strings.Contains(r.stderr, want) {
			t.Errorf("the log does not say %q:\n%s", want, r.stderr)
		}
		if _, err := os.Stat(filepath.Join(svc, "yuzu-agent")); !os.IsNotExist(err) {
			t.Errorf("the agent made a leaf in a cgroup it shares: %v", err)
		}
	})
}

// TestNoSocketDirsLeft: go-plugin's per-child socket directories do not pile up in
// TMPDIR. A running agent whose plugin is killed for its memory (4 times: a fifth in a
// minute would stop its restarts) keeps at most the live child's; after 20 execs whose
// plugin is killed for its memory and 20 plain ones, and after the agent stops, the
// directory is empty.
func TestNoSocketDirsLeft(t *testing.T) {
	t.Parallel()
	// Short: a socket's path has a length limit, and the agent uses /tmp instead of
	// a TMPDIR too long for it.
	tmp, err := os.MkdirTemp("/tmp", "ys")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	env := append(baseEnv(), "TMPDIR="+tmp)
	// left lists what is in tmp, one level down.
	left := func() []string {
		des, _ := os.ReadDir(tmp)
		var names []string
		for _, de := range des {
			names = append(names, de.Name())
			if de.IsDir() {
				sub, _ := os.ReadDir(filepath.Join(tmp, de.Name()))
				for _, s := range sub {
					names = append(names, de.Name()+"/"+s.Name())
				}
			}
		}
		return names
	}
	f := newFleet(t, fleetserver.Options{}, hogBin)
	a := f.agentEnv(env, "--plugin-limits", "hog:memory_mib=64")
	needBoxes(t, a.stderr.String(), "memory")
	ctx := testCtx(t, 300*time.Second)
	for i := range 4 {
		expectResult(t, f.do(t, ctx, command(fmt.Sprint("oom-", i), "hog", "alloc", "mib=512")), failure, 1,
			"error|plugin exceeded its memory limit (64 MiB)")
		expectResult(t, f.do(t, ctx, command(fmt.Sprint("back-", i), "hog", "ok")), success, 0, "ok|hog")
		// The running agent's directory, with the live child's socket directory in it.
		if names := left(); len(names) != 2 || !strings.HasPrefix(names[0], "yuzu-sock-") || !strings.Contains(names[1], "/plugin-dir") {
			t.Errorf("after memory kill %d, TMPDIR holds %q, want the agent's directory and the live child's", i+1, names)
		}
	}
	if code := a.stop(t); code != 0 {
		t.Errorf("agent exit %d", code)
	}
	if names := left(); len(names) != 0 {
		t.Errorf("after the agent stopped, TMPDIR holds %q", names)
	}

	w := newWorld(t, tagsBin, hogBin)
	for i := range 20 {
		r := runAgent(t, env, "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "--plugin-limits", "hog:memory_mib=64", "exec", "hog", "alloc", "mib=512")
		if r.code != 1 || r.stdout != agentError("plugin exceeded its memory limit (64 MiB)") {
			t.Fatalf("exec %d of a memory kill: %s", i, r)
		}
		if r := runAgent(t, env, "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "exec", "tags", "count"); r.code != 0 {
			t.Fatalf("exec %d: %s", i, r)
		}
	}
	if names := left(); len(names) != 0 {
		t.Errorf("after 40 execs, TMPDIR holds %q", names)
	}
}
