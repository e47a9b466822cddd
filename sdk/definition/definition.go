// Package definition reads and checks InstructionDefinitions, the YAML documents
// (apiVersion yuzu.io/v1alpha1) that tell a fleet server, and the agent's
// `exec DEFINITION-ID`, how to run a plugin action: its parameters and their rules,
// its result columns, its platforms, how long to wait and who may run it.
//
// A plugin ships its own definitions (sdk.Plugin.Definitions) and they must agree with
// its declarations: CheckAgreement says where they do not, and sdktest runs it in a
// plugin's own tests. Parse reads one YAML stream strictly (an unknown field is an
// error, so a typo cannot silently drop a rule); a Catalog indexes definitions from
// several sources by id; Definition.Validate checks the parameters of one command.
//
// The format is documented in docs/definitions.md of the yuzu repository.
package definition

import (
	"maps"
	"slices"
	"time"

	"github.com/yuzugo/yuzu/sdk"
)

// APIVersion is the only apiVersion this package accepts.
const APIVersion = "yuzu.io/v1alpha1"

// Kind is the only document kind this package accepts.
const Kind = "InstructionDefinition"

// Instruction types (spec.type).
const (
	// TypeQuestion marks a read-only definition.
	TypeQuestion = "question"
	// TypeAction marks a definition that may change state on the device.
	TypeAction = "action"
)

// Approval modes (spec.approval.mode).
const (
	// ApprovalAuto lets anyone allowed to execute the definition run it at once.
	ApprovalAuto = "auto"
	// ApprovalRoleGated requires an approver holding one of the gating roles.
	ApprovalRoleGated = "role-gated"
)

// Parameter and column types. Parameters always travel as strings; the type says how
// Validate reads them.
const (
	TypeString = sdk.TypeString
	TypeInt32  = sdk.TypeInt32
	TypeInt64  = sdk.TypeInt64
	TypeBool   = sdk.TypeBool
)

// Definition is one parsed and checked InstructionDefinition, flattened into plain
// fields. The nesting of the YAML (metadata, spec.execution, spec.gather, ...) is only
// a file-format detail, so callers read d.Plugin rather than d.Spec.Execution.Plugin.
type Definition struct {
	// ID is metadata.id, e.g. "device.tags.get".
	ID string
	// DisplayName is metadata.displayName, a human title.
	DisplayName string
	// Version is metadata.version, the semver of this definition.
	Version string
	// Description is metadata.description: what it does and what it cannot tell you.
	Description string
	// Tags are metadata.tags, free words for search.
	Tags []string

	// Type is spec.type: TypeQuestion or TypeAction.
	Type string
	// Platforms is spec.platforms, a subset of windows, linux and darwin.
	Platforms []string
	// Plugin is spec.execution.plugin, the plugin that runs the definition.
	Plugin string
	// Action is spec.execution.action, the plugin action it calls.
	Action string
	// Concurrency is spec.execution.concurrency (upstream uses "per-device").
	Concurrency string

	// Parameters are spec.parameters.properties, sorted by name.
	Parameters []Parameter
	// Columns are spec.result.columns, in the order the rows carry them after the
	// row kind.
	Columns []Column
	// ReadablePayload is spec.readablePayload, a template with ${param} placeholders.
	ReadablePayload string
	// TTLSeconds is spec.gather.ttlSeconds, how long answers are awaited; always > 0.
	TTLSeconds int
	// Approval is spec.approval.mode: ApprovalAuto or ApprovalRoleGated.
	Approval string
	// ExecuteRoles is spec.permissions.executeRoles. Upstream treats it as
	// documentation; the server's capability catalogue decides access.
	ExecuteRoles []string
	// AuthorRoles is spec.permissions.authorRoles.
	AuthorRoles []string
	// MinAgentVersion is spec.compatibility.minAgentVersion.
	MinAgentVersion string
	// RequiredPlugins is spec.compatibility.requiredPlugins.
	RequiredPlugins []string
	// Phase is status.phase, e.g. "active".
	Phase string

	// Source says where the definition came from: "<file>: document <n>".
	Source string
}

// Parameter is one entry of spec.parameters.properties: the same type a plugin
// declares its parameters with, so that a definition and a declaration are checked by
// one piece of code. Default is never injected (the plugin applies its own).
type Parameter = sdk.Parameter

// Column is one entry of spec.result.columns.
type Column = sdk.Column

// TTL returns gather.ttlSeconds as a duration; the agent uses it as the command
// deadline when a command runs through this definition (docs/agent.md).
func (d Definition) TTL() time.Duration {
	return time.Duration(d.TTLSeconds) * time.Second
}

// Param returns the parameter called name and whether the definition declares it.
func (d Definition) Param(name string) (Parameter, bool) {
	// A linear scan: definitions have a handful of parameters, and a Definition built
	// by hand need not keep them sorted.
	i := slices.IndexFunc(d.Parameters, func(p Parameter) bool { return p.Name == name })
	if i < 0 {
		return Parameter{}, false
	}
	return d.Parameters[i], true
}

// SupportsPlatform reports whether spec.platforms names goos ("windows", "linux",
// "darwin", i.e. runtime.GOOS values).
func (d Definition) SupportsPlatform(goos string) bool {
	return slices.Contains(d.Platforms, goos)
}

// clone returns a deep copy, so that a caller changing a returned Definition cannot
// change the catalogue that every later Lookup reads.
func (d Definition) clone() Definition {
	c := d
	c.Tags = slices.Clone(d.Tags)
	c.Platforms = slices.Clone(d.Platforms)
	c.Columns = slices.Clone(d.Columns)
	c.ExecuteRoles = slices.Clone(d.ExecuteRoles)
	c.AuthorRoles = slices.Clone(d.AuthorRoles)
	c.RequiredPlugins = slices.Clone(d.RequiredPlugins)
	if d.Parameters != nil {
		c.Parameters = make([]Parameter, len(d.Parameters))
		for i, p := range d.Parameters {
			c.Parameters[i] = cloneParameter(p)
		}
	}
	return c
}

func cloneParameter(p Parameter) Parameter {
	c := p
	c.Enum = slices.Clone(p.Enum)
	c.Default = clonePtr(p.Default)
	c.MinLength = clonePtr(p.MinLength)
	c.MaxLength = clonePtr(p.MaxLength)
	c.Minimum = clonePtr(p.Minimum)
	c.Maximum = clonePtr(p.Maximum)
	c.Messages = maps.Clone(p.Messages)
	return c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
