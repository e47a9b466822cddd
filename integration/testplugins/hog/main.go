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

func main() {
	sdk.Serve(newPlugin())
}

func newPlugin() *sdk.Plugin {
	p := testplugin.New("hog", "Integration test plugin: uses more than its box allows")
	p.Handle("alloc", alloc, sdk.Describe("Allocates mib MiB and touches every page, then answers allocated|MiB"))
	p.Handle("forkbomb", forkbomb, sdk.Describe("Starts a shell fork bomb whose processes carry the tag, answers started|pid and leaves it running"))
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
