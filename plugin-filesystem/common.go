package main

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/rows"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
)

// Limits shared by several actions, as upstream.
const (
	// maxTextFile bounds the files read, search, replace and delete_lines take whole
	// (and the content write_content accepts): 100 MiB, equality allowed.
	maxTextFile = 100 << 20
	// maxHashFile bounds file_hash and find_by_hash: 10 GiB, equality allowed.
	maxHashFile = 10 << 30
	// maxPathBytes bounds every path parameter, as the definitions do.
	maxPathBytes = 4096
)

// pathParam declares a required path parameter. missing is the action's own text for
// a missing path (upstream words it per action); maxPathBytes bounds it.
func pathParam(name, description, missing string) sdk.ActionOption {
	return sdk.Param(name, sdk.TypeString, description, sdk.Required(), sdk.MaxLength(maxPathBytes),
		sdk.Message(sdk.RuleRequired, missing))
}

// baseDirParam declares the optional base_dir every path-taking action accepts.
func baseDirParam() sdk.ActionOption {
	return sdk.Param("base_dir", sdk.TypeString,
		"When set, the path (after every symbolic link is resolved) must be this directory or inside it. "+
			"A directory that a user other than root or the agent's user could change, itself or any parent, is refused.",
		sdk.MaxLength(maxPathBytes))
}

// baseHandler is an action that works beneath the command's base directory (nil
// without base_dir).
type baseHandler func(ctx context.Context, req *sdk.Request, out *sdk.Output, base *pathcheck.Base) (sdk.Result, error)

// withBase resolves the command's base_dir once, before h runs, and holds it open until
// h returns, so every path h looks at is confined beneath that one directory
// (docs/filesystem.md, "base_dir"). outside is the action's wording for a path outside
// base_dir, answered for a base_dir that does not exist or is no directory.
func withBase(outside string, h baseHandler) sdk.Handler {
	return func(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
		base, res := openBase(out, req.Params.Get("base_dir", ""), outside)
		if res != nil {
			return *res, nil
		}
		defer base.Close()
		return h(ctx, req, out, base)
	}
}

// openBase opens the base directory raw ("" is none: nil). A base that a user other
// than root or the agent's user could redirect is refused with a row that says who;
// any other failure answers outside. On failure the error row has been written.
func openBase(out *sdk.Output, raw, outside string) (*pathcheck.Base, *sdk.Result) {
	base, err := pathcheck.OpenBase(raw)
	if err == nil {
		return base, nil
	}
	var ue *pathcheck.UntrustedError
	if errors.As(err, &ue) {
		r := out.Fail("base directory refused: " + ue.Error())
		return nil, &r
	}
	r := out.Fail(outside)
	return nil, &r
}

// statPath describes the canonical path canon, following links as upstream does
// when there is no base; with a base without following any, beneath the held base,
// so a link swapped in since the validation cannot lead the look outside.
func statPath(base *pathcheck.Base, canon string) (fs.FileInfo, error) {
	if base == nil {
		return os.Stat(canon)
	}
	return pathcheck.Stat(base, canon)
}

// flagParam declares a true/false parameter the way the upstream definitions do: a
// string limited to "true" and "false", read with Params.Bool (only "true" is true).
func flagParam(name, description, def string) sdk.ActionOption {
	return sdk.Param(name, sdk.TypeString, description, sdk.Default(def), sdk.Enum("true", "false"))
}

// Where each action works, for the manifest. The mechanisms name what does the work.
var (
	everywhere = sdk.OnAll(sdk.OSSupport{Level: sdk.SupportSupported, Mechanism: "in_process"})
	notOnLinux = sdk.OnLinux(sdk.OSSupport{Level: sdk.SupportUnsupported,
		Fallback: "answers that it is not supported on this platform"})
)

// writeRows writes rows built by an internal package (acl, hashwalk), whose fields
// are raw: the SDK escapes them.
func writeRows(out *sdk.Output, rs []rows.Row) {
	for _, r := range rs {
		out.Row(r.Kind, r.Fields...)
	}
}
