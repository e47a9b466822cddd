// Command probe is a test-only plugin for the SDK's real-child tests. It misbehaves
// the way careless plugins do (it writes to stdout before Serve and from a handler,
// both through os.Stdout and straight to file descriptor 1) and reports what it sees
// of its own process: environment, pid, parent.
package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/yuzugo/yuzu/sdk"
)

// strayWrites writes to stdout both ways a plugin can: through os.Stdout and with a
// raw write(2) on descriptor 1, as C code or a careless library would.
func strayWrites(where string) {
	fmt.Println("stray " + where + " line on os.Stdout")
	_, _ = syscall.Write(1, []byte("stray "+where+" line on fd 1\n"))
}

func main() {
	strayWrites("main")
	p := sdk.New("probe", "0.0.1", "SDK test plugin")
	p.Handle("stdout", func(context.Context, *sdk.Request, *sdk.Output) (sdk.Result, error) {
		strayWrites("handler")
		return sdk.Done(), nil
	})
	p.Handle("echo", func(_ context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
		for _, k := range req.Params.Keys() {
			out.Row("param", k, req.Params.Get(k, ""))
		}
		return sdk.Done(), nil
	})
	p.Handle("env", func(_ context.Context, _ *sdk.Request, out *sdk.Output) (sdk.Result, error) {
		var keys []string
		for _, kv := range os.Environ() {
			k, _, _ := strings.Cut(kv, "=")
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out.Row("env", k)
		}
		return sdk.Done(), nil
	})
	p.Handle("pid", func(_ context.Context, _ *sdk.Request, out *sdk.Output) (sdk.Result, error) {
		out.Row("pid", strconv.Itoa(os.Getpid()))
		out.Row("ppid", strconv.Itoa(os.Getppid()))
		return sdk.Done(), nil
	})
	// block writes <marker>.started, waits for its context to end, then writes the
	// context's error to <marker>: the test's evidence that cancellation arrived.
	p.Handle("block", func(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
		marker, err := req.Params.Required("marker")
		if err != nil {
			return out.Fail(err.Error()), nil
		}
		if err := os.WriteFile(marker+".started", nil, 0o644); err != nil {
			return out.Fail(err.Error()), nil
		}
		<-ctx.Done()
		if err := os.WriteFile(marker, []byte(ctx.Err().Error()), 0o644); err != nil {
			return out.Fail(err.Error()), nil
		}
		return out.Fail(ctx.Err().Error()), nil
	})
	// -debug serves for a debugger (sdk.WithDebug), as a plugin author would wire it.
	sdk.Serve(p, sdk.WithDebug(len(os.Args) == 2 && os.Args[1] == "-debug"))
}
