// Command sleeper is a test plugin for the integration tests: it sleeps (with and
// without honouring its context), streams many rows, and reports its own environment
// and pid. It is built against the public SDK only and never installed.
package main

import (
	"context"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/yuzugo/yuzu/integration/testplugins/internal/testplugin"
	"github.com/yuzugo/yuzu/sdk"
)

func main() {
	sdk.Serve(newPlugin())
}

func newPlugin() *sdk.Plugin {
	p := testplugin.New("sleeper", "Integration test plugin: sleeps, streams rows, reports its environment")
	p.Handle("sleep", sleep, sdk.Describe("Sleeps seconds=N ignoring cancellation: the agent must kill it"))
	p.Handle("sleep_ctx", sleepCtx, sdk.Describe("Sleeps seconds=N or until the command is cancelled"))
	p.Handle("rows", manyRows, sdk.Describe("Streams n=N small rows"))
	p.Handle("env", env, sdk.Describe("Lists the process environment as env|KEY|VALUE rows, sorted"))
	p.Handle("active", activeSleeps, sdk.Describe("Answers active|N: how many sleep and sleep_ctx handlers are running in this process"))
	p.Handle("pid", pid, sdk.Describe("Answers pid|<process id>|<parent process id>"))
	return p.Plugin
}

// seconds reads the seconds parameter as a decimal number (0.2 is allowed, unlike
// the SDK's integer parsing, so tests can stay short).
func seconds(req *sdk.Request) (time.Duration, error) {
	v, err := req.Params.Required("seconds")
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		return 0, &paramError{"seconds must be a non-negative number, got " + strconv.Quote(v)}
	}
	return time.Duration(f * float64(time.Second)), nil
}

// markStarted creates the file named by the started parameter, if any, so a test can
// tell the handler is running rather than guess with a sleep; a loaded machine makes
// any guess wrong sooner or later.
func markStarted(req *sdk.Request) {
	if path, ok := req.Params.Lookup("started"); ok {
		_ = os.WriteFile(path, nil, 0o600)
	}
}

type paramError struct{ msg string }

func (e *paramError) Error() string { return e.msg }

// active counts the sleep and sleep_ctx handlers running, so a test can see whether a
// handler outlived its command.
var active atomic.Int64

func activeSleeps(_ context.Context, _ *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	out.Row("active", strconv.FormatInt(active.Load(), 10))
	return sdk.Done(), nil
}

func sleep(_ context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	active.Add(1)
	defer active.Add(-1)
	d, err := seconds(req)
	if err != nil {
		return out.Fail(err.Error()), nil
	}
	markStarted(req)
	// Deliberately blind to ctx: this is the hung handler the supervisor must kill.
	time.Sleep(d)
	out.Row("slept", d.String())
	return sdk.Done(), nil
}

func sleepCtx(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	active.Add(1)
	defer active.Add(-1)
	d, err := seconds(req)
	if err != nil {
		return out.Fail(err.Error()), nil
	}
	markStarted(req)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		out.Row("slept", d.String())
		return sdk.Done(), nil
	case <-ctx.Done():
		return out.Fail("cancelled: " + ctx.Err().Error()), nil
	}
}

// payload is the fixed free-text field of every generated row.
const payload = "abcdefghijklmnopqrstuvwxyz"

func manyRows(_ context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	n, ok := req.Params.Int("n", 10)
	if !ok && req.Params.Has("n") {
		return out.Fail("n must be an integer"), nil
	}
	for i := range n {
		out.Row("row", strconv.Itoa(i), payload)
	}
	return sdk.Done(), nil
}

func env(_ context.Context, _ *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	vars := os.Environ()
	sort.Strings(vars)
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		out.Row("env", k, v)
	}
	return sdk.Done(), nil
}

func pid(_ context.Context, _ *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	out.Row("pid", strconv.Itoa(os.Getpid()), strconv.Itoa(os.Getppid()))
	return sdk.Done(), nil
}
