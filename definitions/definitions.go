// Package definitions holds the workflow definitions that ship with the agent: the
// InstructionDefinitions that run one plugin action under a workflow's own id and are
// kept apart from every plugin. A plugin's own definitions ship inside the plugin
// (sdk.Plugin.Definitions); the agent's catalogue is those plus these. The format is
// read and checked by github.com/yuzugo/yuzu/sdk/definition and documented in
// docs/definitions.md.
package definitions

import (
	"embed"
	"sync"

	"github.com/yuzugo/yuzu/sdk/definition"
)

//go:embed workflows/*.yaml
var embedded embed.FS

var load = sync.OnceValues(func() ([]definition.Definition, error) {
	return definition.ParseFS(embedded, "workflows")
})

// Workflows returns the workflow definitions embedded in the binary, parsed once. The
// slice is shared: callers must not change it.
func Workflows() ([]definition.Definition, error) { return load() }
