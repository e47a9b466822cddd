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
		t.Skipf("no cgroups here: %s", h.Unavailable())
	}
	return h, b
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
		t.Skip("no cgroup v2: the child joins its v1 cgroups only after its start, too late for this shell")
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
