package proctree

import (
	"os/exec"
	"testing"
	"time"
)

// HasChildren sees a child, and a child not yet reaped, and no longer sees it once
// it is reaped.
func TestHasChildren(t *testing.T) {
	if HasChildren() {
		t.Skip("the test process already has children; nothing to observe")
	}
	cmd := exec.Command("/bin/sleep", "0.1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !HasChildren() {
		t.Error("a running child is not seen")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if HasChildren() {
		t.Error("a reaped child is still seen")
	}
}

func TestDescendantsAndKill(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 30 & sleep 30 & wait")
	Prepare(cmd, true)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g, err := Attach(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var ds []int
	for range 100 {
		if ds = Descendants(cmd.Process.Pid); len(ds) == 2 {
			break
		}
		exec.Command("/bin/sleep", "0.01").Run()
	}
	if len(ds) != 2 {
		t.Fatalf("descendants of the shell: %v, want its two sleeps", ds)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// SIGKILL is delivered at once but a process takes a moment to finish exiting,
	// and the shell's sleeps are not our children, so their exit cannot be waited
	// for: poll, with a bound far above any exit time.
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range ds {
		for processAlive(pid) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if processAlive(pid) {
			t.Errorf("pid %d survived the group kill", pid)
		}
	}
}
