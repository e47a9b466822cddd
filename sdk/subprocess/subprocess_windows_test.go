package subprocess

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// The Windows tests run this test binary itself as the tool (subprocess_test.go's
// /bin/sh tools are Unix ones): with helperEnv set, TestMain plays the part the
// variable names instead of running the tests.
const helperEnv = "YUZU_SUBPROCESS_HELPER"

func TestMain(m *testing.M) {
	switch role, arg, _ := strings.Cut(os.Getenv(helperEnv), ":"); role {
	case "":
		os.Exit(m.Run())
	case "exit":
		n, _ := strconv.Atoi(arg)
		os.Stdout.WriteString("exiting " + arg + "\n")
		os.Exit(n)
	case "print":
		n, _ := strconv.Atoi(arg)
		os.Stdout.WriteString(strings.Repeat("x", n))
		os.Exit(0)
	case "sleep":
		time.Sleep(time.Hour)
	case "spawn":
		// Start a grandchild that sleeps, write its pid to the file arg, and sleep.
		exe, _ := os.Executable()
		c := exec.Command(exe)
		c.Env = []string{helperEnv + "=sleep"}
		if err := c.Start(); err != nil {
			os.Stdout.WriteString(err.Error())
			os.Exit(7)
		}
		if err := os.WriteFile(arg, []byte(strconv.Itoa(c.Process.Pid)), 0o600); err != nil {
			os.Exit(8)
		}
		time.Sleep(time.Hour)
	}
	os.Exit(9)
}

func helper(t *testing.T, role string, timeout time.Duration) Spec {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Spec{Argv: []string{exe}, Env: []string{helperEnv + "=" + role}, Timeout: timeout}
}

func TestWindowsExitCodes(t *testing.T) {
	for _, code := range []int{0, 3, 255} {
		res, err := Run(context.Background(), helper(t, "exit:"+strconv.Itoa(code), 30*time.Second))
		if err != nil || res.Reason != ReasonExited || res.ExitCode != code || !res.Complete() {
			t.Errorf("exit %d: %+v, %v", code, res, err)
		}
		if want := "exiting " + strconv.Itoa(code) + "\n"; string(res.Output) != want {
			t.Errorf("exit %d: output %q, want %q", code, res.Output, want)
		}
	}
}

func TestWindowsMissingTool(t *testing.T) {
	_, err := Run(context.Background(), Spec{Argv: []string{`C:\nonexistent\yuzu-tool.exe`}})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v; want one wrapping fs.ErrNotExist", err)
	}
	if _, err := Run(context.Background(), Spec{Argv: []string{`tool.exe`}}); !errors.Is(err, ErrRelativePath) {
		t.Errorf("relative: err = %v; want ErrRelativePath", err)
	}
}

func TestWindowsOutputCap(t *testing.T) {
	spec := helper(t, "print:5000", 30*time.Second)
	spec.MaxOutput = 1000
	res, err := Run(context.Background(), spec)
	if err != nil || len(res.Output) != 1000 || !res.OutputTruncated || res.Complete() {
		t.Errorf("got %d bytes, truncated %v, %+v, %v", len(res.Output), res.OutputTruncated, res.Reason, err)
	}
}

// TestWindowsTimeoutKillsTree: the tool's job object ends the tool and the process
// it started when the deadline passes.
func TestWindowsTimeoutKillsTree(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
	spec := helper(t, "spawn:"+pidFile, 3*time.Second)
	start := time.Now()
	res, err := Run(context.Background(), spec)
	if err != nil || res.Reason != ReasonDeadline || !res.TimedOut {
		t.Fatalf("%+v, %v; want a deadline kill", res, err)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the tool wrote no grandchild pid (%v) in %s", err, time.Since(start))
	}
	pid, _ := strconv.Atoi(string(data))
	waitGone(t, pid)
}

func TestWindowsCancelKillsTree(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the grandchild exists, so both are running.
		for ctx.Err() == nil {
			if _, err := os.Stat(pidFile); err == nil {
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	res, err := Run(ctx, helper(t, "spawn:"+pidFile, time.Minute))
	cancel()
	if err != nil || res.Reason != ReasonCancelled {
		t.Fatalf("%+v, %v; want a cancelled kill", res, err)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(string(data))
	waitGone(t, pid)
}

// waitGone waits (generously) until process pid has ended.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return // already gone, its pid released
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, 30_000)
	if err != nil || ev != windows.WAIT_OBJECT_0 {
		t.Errorf("grandchild %d still running 30 s after its tool was killed (%d, %v)", pid, ev, err)
	}
}
