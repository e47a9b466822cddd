// Package testplugin is what the integration test plugins (crasher, hog, hostile,
// sleeper) declare alike: their version, the support each of their actions claims,
// and the ok action the tests use to see that a plugin answers. Each test plugin's
// main then holds only the behaviour it exists for. The mismatch plugin does not use
// it: its declaration is the very thing its test checks.
package testplugin

import (
	"context"

	"github.com/yuzugo/yuzu/sdk"
)

// Plugin is a test plugin being declared; serve its *sdk.Plugin.
type Plugin struct{ *sdk.Plugin }

// New returns the test plugin called name, at version 0.0.1, with its first action
// already declared: ok, which answers ok|<name>.
func New(name, description string) Plugin {
	p := Plugin{sdk.New(name, "0.0.1", description)}
	p.Handle("ok", func(_ context.Context, _ *sdk.Request, out *sdk.Output) (sdk.Result, error) {
		out.Row("ok", name)
		return sdk.Done(), nil
	}, sdk.Describe("Answers ok|"+name))
	return p
}

// everywhere is the support every action of a test plugin declares: supported on
// every system, first rung, done in process. None of the integration tests is about
// what a test plugin claims here.
var everywhere = sdk.OnAll(sdk.OSSupport{Level: sdk.SupportSupported, Rung: 1, Mechanism: "in_process"})

// Handle declares action as sdk.Plugin.Handle does, its support being everywhere's.
func (p Plugin) Handle(action string, h sdk.Handler, opts ...sdk.ActionOption) {
	p.Plugin.Handle(action, h, append(opts, everywhere)...)
}
