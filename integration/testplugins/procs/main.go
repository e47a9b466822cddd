// Command procs is a test plugin for the integration tests of plugin upgrades: the
// same source builds each version (-ldflags "-X main.version=2.0.0") and each way a
// new version can fail (-X main.mode=...). It is built against the public SDK only and
// never installed.
//
// Modes:
//
//	exit        exits 1 at every start, before its handshake
//	later-exit  answers its first start (the trial `plugins add` makes), then exits 1
//	            at every later start, before its handshake
//	later-hang  answers its first start, then at every later start hangs in its
//	            start: it answers the handshake and Describe, and never Configure
//	crash       starts, then exits 3 three seconds later, every time
//
// Its starts are counted in $HOME/procs-<version>-<mode>-starts (the agent hands a
// plugin its HOME), which is how a later start knows it is one.
package main

import (
	"context"
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/semver"
)

var (
	version = "1.0.0"
	mode    = ""
)

//go:embed definitions/*.yaml
var definitions embed.FS

func main() {
	starts := countStart()
	switch {
	case mode == "exit", mode == "later-exit" && starts > 1:
		fmt.Fprintln(os.Stderr, "procs: failing at start, as built to")
		os.Exit(1)
	case mode == "crash":
		go func() {
			// Long enough for the trial start of plugins add to be over.
			time.Sleep(3 * time.Second)
			os.Exit(3)
		}()
	}
	p := newPlugin()
	if mode == "later-hang" && starts > 1 {
		p.OnConfigure(func(ctx context.Context, _ sdk.Config) error {
			<-ctx.Done() // until the agent gives up on the start
			return ctx.Err()
		})
	}
	sdk.Serve(p)
}

// countStart adds one to this build's start count and returns it.
func countStart() int {
	home := os.Getenv("HOME")
	if home == "" {
		return 1
	}
	path := filepath.Join(home, "procs-"+version+"-"+mode+"-starts")
	b, _ := os.ReadFile(path)
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	n++
	_ = os.WriteFile(path, []byte(strconv.Itoa(n)), 0o600)
	return n
}

func newPlugin() *sdk.Plugin {
	p := sdk.New("procs", version, "Integration test plugin: processes, in versions")
	p.OnlyDeclaredParams()
	everywhere := sdk.OnAll(sdk.OSSupport{Level: sdk.SupportSupported})
	opts := []sdk.ActionOption{
		everywhere,
		sdk.Describe("Lists processes as proc rows (a fixed list: the test needs no real ones)"),
		sdk.Row("proc", "pid:int32", "user", "command"),
	}
	if atLeast("2.0.0") {
		// Version 2 filters by user; version 1 has no such parameter, and refuses it.
		opts = append(opts, sdk.Param("user", sdk.TypeString, "Only this user's processes"))
		p.Definitions(definitions, "definitions")
	}
	p.Handle("list", func(_ context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
		user := req.Params.Get("user", "")
		for _, pr := range [][3]string{{"1", "root", "/sbin/init"}, {"42", "nobody", "sleep"}} {
			if user == "" || user == pr[1] {
				out.Row("proc", pr[0], pr[1], pr[2])
			}
		}
		return sdk.Complete(), nil
	}, opts...)
	p.Handle("version", func(_ context.Context, _ *sdk.Request, out *sdk.Output) (sdk.Result, error) {
		out.Row("version", version, strconv.Itoa(os.Getpid()))
		return sdk.Done(), nil
	}, everywhere, sdk.Describe("Answers version|<version>|<pid>"), sdk.Row("version", "version", "pid:int32"))
	return p
}

func atLeast(v string) bool {
	c, ok := semver.Compare(version, v)
	return ok && c >= 0
}
