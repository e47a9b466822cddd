// Command hog is a test plugin for the integration tests of the plugins' boxes
// (docs/agent.md "Resource limits"): it allocates more memory than its limit, starts
// a fork bomb, and leaves a double-forked process in a session of its own. It is
// built against the public SDK only and never installed.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/yuzugo/yuzu/integration/testplugins/internal/testplugin"
	"github.com/yuzugo/yuzu/sdk"
)

// sleepEnv, set in the environment of the processes spawn starts, makes hog sleep
// that many seconds instead of serving: a process that stays in the box, on any system.
const sleepEnv = "YUZU_HOG_SLEEP"

func main() {
	if s := os.Getenv(sleepEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 3600 {
			os.Exit(2)
		}
		time.Sleep(time.Duration(n) * time.Second)
		return
	}
	sdk.Serve(newPlugin())
}

func newPlugin() *sdk.Plugin {
	p := testplugin.New("hog", "Integration test plugin: uses more than its box allows")
	p.Handle("alloc", alloc, sdk.Describe("Allocates mib MiB and touches every page, then answers allocated|MiB"))
	p.Handle("forkbomb", forkbomb, sdk.Describe("Starts a shell fork bomb whose processes carry the tag, answers started|pid and leaves it running"))
	p.Handle("spawn", spawn, sdk.Describe("Starts n copies of itself that sleep seconds each, answers spawned|N and refused|ERROR for the first start refused"))
	p.Handle("escape", escape, sdk.Describe("Starts a sleep that double-forks away (its parent exits) into a session of its own, answers escaped|pid"))
	return p.Plugin
}

// keep holds the allocations so that the collector cannot free them.
var keep [][]byte

func alloc(_ context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	mib, ok := req.Params.Int("mib", 0)
	if !ok || mib <= 0 {
		return out.Fail("mib must be a positive number"), nil
	}
	// 64 MiB at a time, every page written, so the memory is really used.
	for done := 0; done < mib; done += 64 {
		b := make([]byte, 64<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
	}
	out.Row("allocated", strconv.Itoa(mib))
	return sdk.Done(), nil
}

func forkbomb(_ context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	tag, err := req.Params.Required("tag")
	if err != nil {
		return sdk.Result{}, err
	}
	// The classic bomb: each call starts two more in the background and returns.
	// $0 is the tag, so every process of it shows the tag in its command line.
	bomb := exec.Command("/bin/sh", "-c", "b() { b | b & }; b", tag)
	if err := bomb.Start(); err != nil {
		return sdk.Result{}, err
	}
	go func() { _ = bomb.Wait() }()
	out.Row("started", strconv.Itoa(bomb.Process.Pid))
	return sdk.Done(), nil
}

func escape(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	seconds, err := req.Params.Required("seconds")
	if err != nil {
		return sdk.Result{}, err
	}
	if _, err := strconv.Atoi(seconds); err != nil {
		return out.Fail("seconds must be a number"), nil
	}
	// sh starts setsid in the background and exits at once: setsid (not a group
	// leader, so it does not fork again) makes a session of its own and becomes
	// the sleep, whose parent is then gone.
	b, err := exec.CommandContext(ctx, "/bin/sh", "-c", "/usr/bin/setsid /bin/sleep "+seconds+" </dev/null >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		return sdk.Result{}, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return sdk.Result{}, fmt.Errorf("sh printed %q", b)
	}
	// Wait until it has become the sleep in its own session.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if strings.TrimSpace(string(comm)) == "sleep" {
			break
		}
		if time.Now().After(deadline) {
			return sdk.Result{}, fmt.Errorf("process %d did not become the sleep", pid)
		}
	}
	out.Row("escaped", strconv.Itoa(pid))
	return sdk.Done(), nil
}

// spawn starts processes that stay in the box until they end (on Windows, where a
// fork bomb needs a shell the system lacks, this is how a box's process limit is
// reached). It stops at the first start refused and says why.
func spawn(_ context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	n, ok := req.Params.Int("n", 0)
	if !ok || n <= 0 || n > 1000 {
		return out.Fail("n must be a number from 1 to 1000"), nil
	}
	seconds, ok := req.Params.Int("seconds", 60)
	_, given := req.Params.Required("seconds")
	if (given == nil && !ok) || seconds < 0 || seconds > 3600 {
		return out.Fail("seconds must be a number from 0 to 3600"), nil
	}
	self, err := os.Executable()
	if err != nil {
		return sdk.Result{}, err
	}
	started := 0
	var refused error
	for range n {
		c := exec.Command(self)
		c.Env = append(os.Environ(), sleepEnv+"="+strconv.Itoa(seconds))
		if refused = c.Start(); refused != nil {
			break
		}
		go func() { _ = c.Wait() }()
		started++
	}
	out.Row("spawned", strconv.Itoa(started))
	if refused != nil {
		out.Row("refused", refused.Error())
	}
	return sdk.Done(), nil
}
