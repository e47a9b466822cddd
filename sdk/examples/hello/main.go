// Command hello is a complete third-party plugin: one action, `greet`, that answers
// `greeting|Hello, <name>!`, and the InstructionDefinition that lets a fleet server
// (or `yuzu-agent exec example.hello.greet`) run it. It shows everything a plugin
// needs; copy it to start one.
package main

import (
	"context"
	"embed"

	"github.com/yuzugo/yuzu/sdk"
)

// definitions are shipped inside the binary: the agent reads them from the plugin, so
// the plugin and its definitions always travel and version together.
//
//go:embed definitions/*.yaml
var definitions embed.FS

func main() {
	sdk.Serve(newPlugin())
}

func newPlugin() *sdk.Plugin {
	p := sdk.New("hello", "1.0.0", "Example plugin: greets whoever you name")
	p.Handle("greet", greet,
		sdk.Describe("Answers greeting|Hello, <name>!"),
		// The SDK checks declared parameters before greet runs: a missing name or one
		// over 128 bytes never reaches it.
		sdk.Param("name", sdk.TypeString, "Who to greet", sdk.Required(), sdk.MaxLength(128),
			sdk.Message(sdk.RuleMaxLength, "name exceeds 128 bytes")),
		sdk.Param("shout", sdk.TypeBool, "Greet in capitals", sdk.Default("false")),
		sdk.Row("greeting", "text"),
		sdk.OnAll(sdk.OSSupport{Level: sdk.SupportSupported, Mechanism: "in_process"}),
	)
	p.Definitions(definitions, "definitions")
	return p
}

func greet(_ context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	greeting := "Hello"
	if req.Params.Bool("shout", false) {
		greeting = "HELLO"
	}
	out.Row("greeting", greeting+", "+req.Params.Get("name", "")+"!")
	return sdk.Done(), nil
}
