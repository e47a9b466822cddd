//go:build unix

package sdk_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
	"github.com/yuzugo/yuzu/sdk/sdktest"
)

// The parent-death test re-runs this test binary as an intermediate parent process
// that starts the plugin; these variables tell it so.
const (
	roleEnv   = "YUZU_SDK_TEST_ROLE"
	pluginEnv = "YUZU_SDK_TEST_PLUGIN"
)

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "parent" {
		os.Exit(runIntermediateParent(os.Getenv(pluginEnv)))
	}
	os.Exit(m.Run())
}

// runIntermediateParent starts the plugin the way the agent does but WITHOUT a
// parent-death signal on the child, prints the child's pid and waits to be killed. Any
// exit of the plugin after this process dies is then the SDK's own doing.
func runIntermediateParent(bin string) int {
	cmd := exec.Command(bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cfg := host.ClientConfig(cmd)
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "parent", Level: hclog.Warn, Output: os.Stderr})
	cfg.StartTimeout = 30 * time.Second
	c := plugin.NewClient(cfg)
	cp, err := c.Client()
	if err != nil {
		fmt.Fprintln(os.Stderr, "intermediate parent: start:", err)
		return 1
	}
	hc, err := host.Dispense(cp)
	if err != nil {
		fmt.Fprintln(os.Stderr, "intermediate parent: dispense:", err)
		return 1
	}
	if err := hc.Configure(context.Background(), sdk.Config{}); err != nil {
		fmt.Fprintln(os.Stderr, "intermediate parent: configure:", err)
		return 1
	}
	if hasPdeathsig(cmd) {
		fmt.Fprintln(os.Stderr, "intermediate parent: the child has a parent-death signal; the test would prove nothing")
		return 1
	}
	fmt.Println(cmd.Process.Pid)
	select {}
}

// processGone reports whether pid has exited: no such process, or a zombie waiting
// to be reaped by whoever adopted it.
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) == 0 || f[0] == "Z" || f[0] == "X"
}

func awaitGone(t *testing.T, pid int, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for !processGone(pid) {
		if time.Since(start) > limit {
			t.Fatalf("plugin pid %d still alive %v later", pid, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// TestChild runs the probe plugin (internal/testplugins/probe) as a real child.
func TestChild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Fatalf("the real-child tests read /proc and need Linux (GOOS=%s)", runtime.GOOS)
	}
	bin := sdktest.Build(t, "./internal/testplugins/probe")

	t.Run("stdout guard", func(t *testing.T) {
		// probe writes to os.Stdout and to fd 1 in main before Serve; Start failing
		// the handshake would already fail here.
		h := sdktest.Start(t, bin, sdk.Config{})
		for range 3 {
			if got := h.Run("stdout", nil).String(); got != "[result_status] UNDECLARED / UNKNOWN\n" {
				t.Fatalf("stdout action: %q", got)
			}
		}
		got := h.Run("echo", map[string]string{"k": "v|w", "empty": ""}).String()
		if want := "param|empty|\nparam|k|v|w\n[result_status] UNDECLARED / UNKNOWN\n"; got != want {
			t.Errorf("echo after stray writes: %q, want %q", got, want)
		}
	})

	t.Run("debug mode: started by hand, attached to", func(t *testing.T) {
		cmd := exec.Command(bin, "-debug")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string)
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "YUZU_PLUGIN_REATTACH=") {
					lines <- sc.Text()
				}
			}
			close(lines)
		}()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-done
		})
		var line string
		select {
		case line = <-lines:
		case <-time.After(time.Minute):
			t.Fatal("no YUZU_PLUGIN_REATTACH line within a minute")
		}
		if line == "" {
			t.Fatal("the plugin ended without printing its reattach line")
		}
		h := sdktest.Attach(t, line, sdk.Config{AgentID: "debugger"})
		if m := h.Manifest(); m.Name != "probe" || m.Protocol != 1 {
			t.Errorf("attached manifest %s, protocol %d", m.Name, m.Protocol)
		}
		if got := h.Run("echo", map[string]string{"k": "v"}).String(); got != "param|k|v\n[result_status] UNDECLARED / UNKNOWN\n" {
			t.Errorf("echo through the reattached plugin: %q", got)
		}
		// SIGTERM ends a plugin in debug mode cleanly.
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			done <- err // for the cleanup
			if err != nil {
				t.Errorf("plugin in debug mode after SIGTERM: %v", err)
			}
		case <-time.After(time.Minute):
			t.Error("plugin in debug mode still running a minute after SIGTERM")
		}
	})

	t.Run("environment is only PATH and go-plugin's", func(t *testing.T) {
		t.Setenv("YUZU_SDK_TEST_SECRET", "must-not-leak")
		h := sdktest.Start(t, bin, sdk.Config{})
		o := h.Run("env", nil)
		sawPath := false
		for _, r := range o.Rows {
			k := strings.TrimPrefix(r, "env|")
			switch {
			case k == "PATH":
				sawPath = true
			case k == host.Handshake.MagicCookieKey, strings.HasPrefix(k, "PLUGIN_"):
			default:
				t.Errorf("plugin environment holds %s", k)
			}
		}
		if !sawPath {
			t.Errorf("plugin environment lacks PATH: %q", o.Rows)
		}
	})

	t.Run("SIGTERM cancels in-flight work and exits", func(t *testing.T) {
		h := sdktest.Start(t, bin, sdk.Config{})
		pid := h.Client.ReattachConfig().Pid
		marker := filepath.Join(t.TempDir(), "cancelled")
		done := make(chan error, 1)
		go func() {
			_, err := h.Execute(context.Background(), host.Command{Action: "block", Params: map[string]string{"marker": marker}})
			done <- err
		}()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := os.Stat(marker + ".started"); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the block action never started")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		took := awaitGone(t, pid, time.Second)
		t.Logf("plugin exited %v after SIGTERM", took)
		b, err := os.ReadFile(marker)
		if err != nil {
			t.Fatalf("handler context was not cancelled before exit: %v", err)
		}
		if string(b) != context.Canceled.Error() {
			t.Errorf("handler saw %q, want %q", b, context.Canceled.Error())
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("the in-flight Execute did not return after the plugin exited")
		}
	})

	t.Run("exits when its parent dies", func(t *testing.T) {
		parent := exec.Command(os.Args[0], "-test.run=^$")
		parent.Env = append(os.Environ(), roleEnv+"=parent", pluginEnv+"="+bin)
		parent.Stderr = os.Stderr
		stdout, err := parent.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := parent.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = parent.Process.Kill(); _ = parent.Wait() }()
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			t.Fatalf("intermediate parent printed no pid: %v", err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil || pid <= 1 {
			t.Fatalf("intermediate parent printed %q, not a pid", line)
		}
		// Leave no orphan behind whatever happens below.
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		if processGone(pid) {
			t.Fatalf("plugin pid %d is not running before its parent is killed", pid)
		}
		if err := parent.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = parent.Wait()
		took := awaitGone(t, pid, 2*time.Second)
		t.Logf("plugin exited %v after its parent was killed", took)
	})
}
