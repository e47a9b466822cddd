// Command hello is a complete third-party plugin, and the one the README walks through:
//
//   - greet answers `greeting|Hello, <name>!`, repeated `times` times (an integer
//     parameter) in a `style` (an enum);
//   - count counts to n, reporting its progress as it goes (a long action).
//
// Both declare everything once, in Go: with Vendor set, the SDK derives their
// InstructionDefinitions (example.hello.greet, example.hello.count) from the
// declarations. definitions/hello.yaml only adds to greet what Go cannot say. Copy it to
// start a plugin; it builds against the SDK module alone.
package main

import (
	"context"
	"embed"
	"flag"
	"strconv"
	"strings"
	"time"

	"github.com/yuzugo/yuzu/sdk"
)

// definitions are shipped inside the binary: the agent reads them from the plugin, so
// the plugin and its definitions always travel and version together.
//
//go:embed definitions/*.yaml
var definitions embed.FS

func main() {
	// -debug serves by hand for a debugger (sdk.WithDebug); never set by the agent.
	debug := flag.Bool("debug", false, "serve for a debugger and print the reattach line")
	flag.Parse()
	sdk.Serve(newPlugin(), sdk.WithDebug(*debug))
}

func newPlugin() *sdk.Plugin {
	p := sdk.New("hello", "1.0.0", "Example plugin: greets whoever you name")
	p.Vendor = "example" // definitions are derived as example.hello.<action>
	everywhere := sdk.OnAll(sdk.OSSupport{Level: sdk.SupportSupported, Mechanism: "in_process"})
	p.Handle("greet", greet,
		sdk.Describe("Answers greeting|Hello, <name>!"),
		// The SDK checks declared parameters before greet runs, on every path: a
		// missing name, one over 128 bytes, times=0 or style=loud never reach it.
		sdk.Param("name", sdk.TypeString, "Who to greet", sdk.Required(), sdk.MaxLength(128),
			sdk.Message(sdk.RuleMaxLength, "name exceeds 128 bytes")),
		sdk.Param("times", sdk.TypeInt32, "How many greetings", sdk.Default("1"), sdk.Minimum(1), sdk.Maximum(3)),
		sdk.Param("style", sdk.TypeString, "How to greet", sdk.Default("plain"), sdk.Enum("plain", "shout")),
		sdk.Row("greeting", "text"),
		everywhere,
	)
	p.Handle("count", count,
		sdk.Describe("Counts to n, one row per number, reporting progress"),
		sdk.Param("n", sdk.TypeInt32, "Where to stop", sdk.Required(), sdk.Minimum(1), sdk.Maximum(1000)),
		sdk.Param("pause_ms", sdk.TypeInt32, "Pause between numbers", sdk.Default("0"), sdk.Minimum(0), sdk.Maximum(1000)),
		sdk.Row("number", "value:int32"),
		everywhere,
	)
	p.Definitions(definitions, "definitions")
	return p
}

func greet(_ context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	word := "Hello"
	if req.Params.Get("style", "plain") == "shout" {
		word = strings.ToUpper(word)
	}
	times, _ := req.Params.Int("times", 1) // declared 1..3: the SDK refused anything else
	for range times {
		out.Row("greeting", word+", "+req.Params.Get("name", "")+"!")
	}
	return sdk.Done(), nil
}

func count(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	n, _ := req.Params.Int("n", 1)
	pause, _ := req.Params.Int("pause_ms", 0)
	for i := 1; i <= n; i++ {
		select {
		case <-ctx.Done():
			return out.Fail("count cancelled at " + strconv.Itoa(i-1)), nil
		case <-time.After(time.Duration(pause) * time.Millisecond):
		}
		out.Row("number", strconv.Itoa(i))
		out.Progress(int64(i), int64(n), "numbers")
	}
	return sdk.Complete(), nil // every number was written: the whole answer
}
