// Command crasher is a test plugin for the integration tests: besides a plain `ok` it
// dies in the middle of a command in several hard ways, so the tests can check that
// the agent answers honestly and restarts it. It is built against the public SDK only
// and never installed.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/yuzugo/yuzu/integration/testplugins/internal/testplugin"
	"github.com/yuzugo/yuzu/sdk"
)

func main() {
	sdk.Serve(newPlugin())
}

func newPlugin() *sdk.Plugin {
	p := testplugin.New("crasher", "Integration test plugin: dies mid-command on request")
	p.Handle("crash", crash, sdk.Describe("Writes row before|crash, makes sure it reached the agent, then exits with status 3"))
	p.Handle("kill", kill, sdk.Describe("Writes row before|kill, makes sure it reached the agent, then kills itself (SIGKILL)"))
	p.Handle("panic", panics, sdk.Describe("Panics inside the handler (the SDK must turn it into an error row)"))
	p.Handle("log", logs, sdk.Describe("Logs an info line and prints a stray line on stdout"))
	return p.Plugin
}

// flushRow writes a row shortly before the process dies. The SDK sends a row at once
// when nothing else is in flight, so the pause only has to let gRPC's writer run once
// and put it on the wire; the agent must then show it before the crash's error row.
// Nothing tells a plugin that the agent has read its row, so the pause is generous: a
// loaded machine may not run the writer for a good part of a second (50 ms lost the
// row under ten busy loops on two cores).
func flushRow(out *sdk.Output, kind, field string) {
	out.Row(kind, field)
	time.Sleep(time.Second)
}

func crash(_ context.Context, _ *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	flushRow(out, "before", "crash")
	os.Exit(3)
	return sdk.Done(), nil // not reached
}

func kill(_ context.Context, _ *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	flushRow(out, "before", "kill")
	if self, err := os.FindProcess(os.Getpid()); err == nil {
		_ = self.Kill() // SIGKILL on Unix
	}
	time.Sleep(time.Minute) // the signal is delivered before this ends
	return sdk.Done(), nil
}

// logs writes one info line through the plugin's logger and one stray line on stdout,
// both of which must show in the agent's log at its default level.
func logs(_ context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	req.Log.Info("crasher says hello", "answer", 42)
	fmt.Println("stray line from a handler")
	out.Row("logged", "yes")
	return sdk.Done(), nil
}

func panics(context.Context, *sdk.Request, *sdk.Output) (sdk.Result, error) {
	panic("crasher was asked to panic")
}
