// Command mismatch is a test plugin whose shipped definition disagrees with its
// declaration (the definition allows a longer name than the action declares), so the
// integration tests can check that `yuzu-agent plugins add` refuses it and says which
// field. It is built against the public SDK only and never installed.
package main

import (
	"context"
	"embed"

	"github.com/yuzugo/yuzu/sdk"
)

//go:embed definitions/*.yaml
var definitions embed.FS

func main() {
	p := sdk.New("mismatch", "0.0.1", "Integration test plugin: its definition disagrees with its declaration")
	p.Handle("echo", func(_ context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
		out.Row("echo", req.Params.Get("name", ""))
		return sdk.Done(), nil
	},
		sdk.Param("name", sdk.TypeString, "anything", sdk.MaxLength(10)),
		sdk.Row("echo", "name"),
		sdk.OnAll(sdk.OSSupport{Level: sdk.SupportSupported}),
	)
	p.Definitions(definitions, "definitions")
	sdk.Serve(p)
}
