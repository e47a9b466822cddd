// Command yuzu-plugin-filesystem is the filesystem plugin: it looks at files and
// directories (exists, list_dir, read, file_hash, get_acl, get_signature,
// get_version_info, search, search_dir, find_by_hash), creates temporary files and
// directories, and changes file contents (replace, write_content, append,
// delete_lines). Every action, its rows, limits and errors, and where it differs from
// the upstream agent, are described in docs/filesystem.md.
package main

import (
	"embed"

	"github.com/yuzugo/yuzu/sdk"
)

// Identity, as upstream.
const (
	pluginName        = "filesystem"
	pluginVersion     = "0.4.0"
	pluginDescription = "Filesystem operations — exists, list_dir, file_hash, search_dir, text ops (admin-only)"
)

// definitions are the device.filesystem.* InstructionDefinitions, shipped inside the
// binary.
//
//go:embed definitions/*.yaml
var definitions embed.FS

// action is one registration: the handler and its declarations live beside each other
// in the file of their group (look.go, identify.go, create.go, change.go).
type action struct {
	name    string
	handler sdk.Handler
	decl    []sdk.ActionOption
}

// actions in the upstream order, which the manifest keeps.
func actions() []action {
	return []action{
		{"exists", exists, existsDecl()},
		{"list_dir", withBase(msgNotAccessible, listDir), listDirDecl()},
		{"file_hash", withBase(msgNotAccessible, fileHash), fileHashDecl()},
		{"create_temp", createTemp, createTempDecl()},
		{"create_temp_dir", createTempDir, createTempDirDecl()},
		{"read", withBase(msgNotAccessible, read), readDecl()},
		{"get_acl", withBase(msgNotAccessible, getACL), getACLDecl()},
		{"get_signature", onValidPath(signature), getSignatureDecl()},
		{"find_by_hash", findByHash, findByHashDecl()},
		{"search_dir", withBase(msgRootOutside, searchDir), searchDirDecl()},
		{"get_version_info", onValidPath(versionInfo), getVersionInfoDecl()},
		{"search", withBase(msgNotAccessible, search), searchDecl()},
		{"replace", withBase(msgNotAccessible, replace), replaceDecl()},
		{"write_content", withBase(msgNotAccessible, writeContent), writeContentDecl()},
		{"append", withBase(msgNotAccessible, appendAction), appendDecl()},
		{"delete_lines", withBase(msgNotAccessible, deleteLines), deleteLinesDecl()},
	}
}

func newPlugin() *sdk.Plugin {
	p := sdk.New(pluginName, pluginVersion, pluginDescription)
	p.Vendor = "device" // the SDK derives the definitions device.filesystem.<action>; definitions/ adds what Go cannot say
	for _, a := range actions() {
		p.Handle(a.name, a.handler, a.decl...)
	}
	p.Definitions(definitions, "definitions")
	return p
}

func main() {
	sdk.Serve(newPlugin())
}
