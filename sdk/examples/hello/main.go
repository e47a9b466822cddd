// Command hello is a complete third-party plugin: one action, `greet`, that answers
// `greeting|Hello, <name>!`. It shows everything a plugin needs; copy it to start one.
package main

import (
	"context"
	"unicode/utf8"

	"github.com/yuzugo/yuzu/sdk"
)

func main() {
	sdk.Serve(newPlugin())
}

func newPlugin() *sdk.Plugin {
	p := sdk.New("hello", "1.0.0", "Example plugin: greets whoever you name")
	p.Handle("greet", greet,
		sdk.Describe("Answers greeting|Hello, <name>!"),
		sdk.Supported(sdk.OSLeg{Support: sdk.SupportSupported, Rung: 1, Mechanism: "in_process"}),
	)
	return p
}

// maxName bounds the name so a caller cannot make the plugin echo megabytes back.
const maxName = 128

func greet(_ context.Context, req *sdk.Request, out *sdk.Output) sdk.Result {
	name, err := req.Params.Required("name")
	if err != nil {
		return out.Fail(err.Error())
	}
	if utf8.RuneCountInString(name) > maxName {
		return out.Failf("name exceeds %d characters", maxName)
	}
	greeting := "Hello"
	if req.Params.Bool("shout", false) {
		greeting = "HELLO"
	}
	out.Row("greeting", greeting+", "+name+"!")
	return sdk.OK()
}
