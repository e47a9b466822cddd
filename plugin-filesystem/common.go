package main

import (
	"github.com/yuzugo/yuzu/sdk"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/row"
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
		"When set, the path (after every symbolic link is resolved) must be this directory or inside it.",
		sdk.MaxLength(maxPathBytes))
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
func writeRows(out *sdk.Output, rows []row.Row) {
	for _, r := range rows {
		out.Row(r.Kind, r.Fields...)
	}
}
