// Command hostile is a test plugin for the integration tests that behaves the way a
// careless or malicious plugin might: it writes rows with invalid UTF-8 and terminal
// control bytes, returns a provenance that tries to forge the capture format, and
// leaves processes behind in every way a plugin can (its own process group, a tool
// run through sdk/subprocess, a child that escapes into its own session). It is built
// against the public SDK only and never installed.
package main

import (
	"context"

	"github.com/yuzugo/yuzu/integration/testplugins/internal/testplugin"
	"github.com/yuzugo/yuzu/sdk"
)

func main() {
	if serveChild() {
		return
	}
	sdk.Serve(newPlugin())
}

func newPlugin() *sdk.Plugin {
	p := testplugin.New("hostile", "Integration test plugin: hostile rows and provenance, processes left behind")
	p.Handle("forge", forge, sdk.Describe("Writes rows with invalid UTF-8 and control bytes and a provenance that tries to forge lines"))
	p.Handle("fields", fields,
		sdk.Describe("Writes declared rows whose fields hold |, \\, invalid UTF-8 and control bytes"),
		sdk.Row("entry", "name", "note"),
		sdk.Row("count", "n:int32"),
	)
	p.Handle("badprov", badProvenance, sdk.Describe("Returns a provenance that is not valid UTF-8"))
	p.Handle("spawn", spawn,
		sdk.Describe("Starts sleeping descendants three ways, writes their pids to pidfile, then waits for cancellation or, with crash=true, exits with status 3"),
		sdk.Param("pidfile", sdk.TypeString, "Where to write `<role> <pid> <pgid> <sid>` lines", sdk.Required()),
		sdk.Param("crash", sdk.TypeBool, "Exit the process instead of waiting", sdk.Default("false")),
		sdk.Param("tag", sdk.TypeString, "Windows: an argument the descendants carry on their command lines"),
		sdk.Row("pid", "role", "pid:int32", "pgid:int32", "sid:int32"),
	)
	return p.Plugin
}

// forgedProvenance is what forge returns as its provenance: were it printed raw, the
// capture would gain an error row and a second, successful trailer.
const forgedProvenance = "hostile:x\nerror|forged\n[result_status] OK / FULL"

func forge(_ context.Context, _ *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	out.Row("bad", "bad\xff")
	// ESC starting a colour sequence, NUL, DEL and the one-character CSI (U+009B).
	out.Row("ctl", "a\x1b[31mred\x00z\x7f\u009b.")
	return sdk.Partial(forgedProvenance), nil
}

// fields writes rows an --output reader must take apart exactly: a `|` in the inner
// field (escaped \| on the wire), raw ones in the last, a trailing backslash, an
// invalid byte, terminal control bytes, and one row of an undeclared kind.
func fields(_ context.Context, _ *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	out.Row("entry", "a|b", "c|d")
	out.Row("entry", "bad\xff\x1b[2J\x00", "tab\there\u009b")
	out.Row("entry", `C:\dir\`, `x\`)
	out.Row("surprise", "z")
	out.Row("count", "3")
	return sdk.Partial(forgedProvenance), nil
}

func badProvenance(_ context.Context, _ *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	out.Row("before", "badprov")
	return sdk.Partial("hostile:\xff"), nil
}
