package limits

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// newBox makes a Host and a box, or skips saying why this machine has none.
func newBox(t *testing.T, l Limits) (*Host, *Box) {
	t.Helper()
	h := New()
	t.Cleanup(h.Close)
	b, err := h.Box("test", l)
	if err != nil {
		t.Fatal(err)
	}
	if b == nil {
		noBoxes(t, "no cgroups here: %s", h.Unavailable())
	}
	return h, b
}

// noBoxes skips the test, or fails it where YUZU_BOXES_REQUIRED=1 says this machine
// has every controller in cgroup v2 (the virtual machine of scripts/test-cgroup2.sh).
func noBoxes(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("YUZU_BOXES_REQUIRED") == "1" {
		t.Fatalf("boxes are required here (YUZU_BOXES_REQUIRED=1), but "+format, args...)
	}
	t.Skipf(format, args...)
}

// A box holds what its child starts, also a process that left the child's session
// and lost its parent; Kill ends them all, and Close removes the box.
func TestBoxKillsEverything(t *testing.T) {
	_, b := newBox(t, Default)
	cmd := exec.Command("/bin/sh", "-c", "/usr/bin/setsid /bin/sleep 3172 </dev/null >/dev/null 2>&1 & echo $!")
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	b.Prepare(cmd)
	out, err := cmd.Output()
	if err != nil {
		b.StartFailed()
		t.Fatal(err)
	}
	if err := b.Started(cmd.Process.Pid); err != nil {
		t.Log("joining after the start (the shell may have exited):", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("sh printed %q", out)
	}
	alive := func() bool {
		c, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		return err == nil && strings.Contains(string(c), "3172")
	}
	for deadline := time.Now().Add(10 * time.Second); !alive(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the sleep did not start")
		}
	}
	if b.v2 == "" {
		noBoxes(t, "no cgroup v2: the child joins its v1 cgroups only after its start, too late for this shell")
	}
	if u := b.Usage(); !u.Known {
		t.Errorf("usage unknown: %+v", u)
	}
	b.Kill()
	for deadline := time.Now().Add(10 * time.Second); alive(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatal("Kill left the escaped sleep running")
		}
	}
	b.Close()
	for _, d := range b.dirs() {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("box directory %s not removed: %v", d, err)
		}
	}
}

// A limit no controller here can hold is reported as zero (not enforced), the others as
// configured: what plugins and metrics show is what the kernel enforces.
func TestBoxClaimsOnlyEnforcedLimits(t *testing.T) {
	l := Limits{MemoryBytes: 64 << 20, CPUs: 1.5, Tasks: 32}
	for _, c := range []struct {
		name string
		h    *Host
		want Limits
	}{
		{"all in v2", &Host{in2: map[string]bool{"memory": true, "cpu": true, "pids": true}}, l},
		{"v2 memory, v1 pids, no cpu", &Host{in2: map[string]bool{"memory": true}, v1: map[string]string{"pids": "/x"}},
			Limits{MemoryBytes: 64 << 20, Tasks: 32}},
		{"none", &Host{}, Limits{}},
	} {
		if got := c.h.enforced(l); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// On a host whose cgroup v2 offers every controller (YUZU_BOXES_REQUIRED=1 says so),
// the boxes take all three from v2 and nothing from v1, and nothing is said missing.
func TestHostTakesEveryControllerFromV2(t *testing.T) {
	if os.Getenv("YUZU_BOXES_REQUIRED") != "1" {
		t.Skip("only where YUZU_BOXES_REQUIRED=1 says every controller is in cgroup v2 (scripts/test-cgroup2.sh)")
	}
	h := New()
	defer h.Close()
	if why := h.Unavailable(); why != "" {
		t.Errorf("Unavailable: %s", why)
	}
	for _, c := range controllers {
		if !h.in2[c] {
			t.Errorf("%s not taken from v2 (boxes: %s)", c, h.Where())
		}
	}
	if len(h.v1) != 0 {
		t.Errorf("v1 used: %v", h.v1)
	}
	_, b := newBox(t, Limits{MemoryBytes: 64 << 20, CPUs: 0.5, Tasks: 16})
	for file, want := range map[string]string{"memory.max": "67108864", "cpu.max": "50000 100000", "pids.max": "16", "memory.oom.group": "1"} {
		got, err := os.ReadFile(b.v2 + "/" + file)
		if err != nil || strings.TrimSpace(string(got)) != want {
			t.Errorf("%s: %q (%v), want %q", file, got, err, want)
		}
	}
}
