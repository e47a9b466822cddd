// Package sdk is everything a yuzu plugin author imports.
//
// A plugin is a child process the agent starts and talks to over gRPC. Its main
// function builds a Plugin, registers actions and calls Serve:
//
//	func main() {
//		p := sdk.New("hello", "1.0.0", "Says hello")
//		p.Handle("greet", greet, sdk.Describe("greets someone"))
//		sdk.Serve(p)
//	}
//
//	func greet(ctx context.Context, req *sdk.Request, out *sdk.Output) sdk.Result {
//		name, err := req.Params.Required("name")
//		if err != nil {
//			return out.Fail(err.Error())
//		}
//		out.Row("greeting", name)
//		return sdk.OK()
//	}
//
// The SDK owns the handshake, the stdout guard (stdout belongs to the handshake), JSON
// logging to stderr, SIGTERM handling, exiting when the agent is gone, row escaping,
// parameter semantics and batching of rows. Sub-packages give the rest: params,
// rows, atomicfile, subprocess and sdktest.
package sdk

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/sdk/params"
)

// Version is the SDK version a plugin reports in its manifest.
const Version = "0.1.0"

// Status is the typed status a command may declare. Most commands declare none
// (StatusUndeclared); a command that worked with a known limitation declares
// StatusConstrained with a provenance saying why.
type Status int

// Statuses, with the upstream numbers.
const (
	StatusUndeclared       Status = 0
	StatusOK               Status = 1
	StatusUnavailable      Status = 2
	StatusPermissionDenied Status = 3
	StatusConstrained      Status = 4
)

var statusNames = [...]string{"UNDECLARED", "OK", "UNAVAILABLE", "PERMISSION_DENIED", "CONSTRAINED"}

// String returns the upstream name, e.g. "CONSTRAINED".
func (s Status) String() string {
	if s < 0 || int(s) >= len(statusNames) {
		return statusNames[0]
	}
	return statusNames[s]
}

// Completeness says whether a command's rows are the whole answer.
type Completeness int

// Completeness values, with the upstream numbers.
const (
	CompletenessUnknown Completeness = 0
	CompletenessFull    Completeness = 1
	CompletenessPartial Completeness = 2
)

var completenessNames = [...]string{"UNKNOWN", "FULL", "PARTIAL"}

// String returns the upstream name, e.g. "PARTIAL".
func (c Completeness) String() string {
	if c < 0 || int(c) >= len(completenessNames) {
		return completenessNames[0]
	}
	return completenessNames[c]
}

// Result ends a command.
type Result struct {
	// Code is the return code: 0 for success, 1 for failure in the shipped plugins.
	Code         int
	Status       Status
	Completeness Completeness
	// Provenance names the cause of a limitation, e.g. "tags:persist_failed".
	Provenance string
}

// OK is the result of a command that succeeded and declares no status.
func OK() Result { return Result{} }

// Failed is the result of a command that failed with return code 1.
func Failed() Result { return Result{Code: 1} }

// Constrained is the result of a command that worked with a known limitation: rc 0,
// CONSTRAINED / PARTIAL and the given provenance.
func Constrained(provenance string) Result {
	return Result{Status: StatusConstrained, Completeness: CompletenessPartial, Provenance: provenance}
}

// Support is how well an operating system supports an action (upstream numbers).
type Support int

// Support levels.
const (
	SupportUndeclared  Support = 0
	SupportUnsupported Support = 1
	SupportPlanned     Support = 2
	SupportConstrained Support = 3
	SupportSupported   Support = 4
)

var supportNames = [...]string{"undeclared", "unsupported", "planned", "constrained", "supported"}

// String returns the lower-case name, e.g. "supported".
func (s Support) String() string {
	if s < 0 || int(s) >= len(supportNames) {
		return supportNames[0]
	}
	return supportNames[s]
}

// OSLeg is one operating system's support for an action.
type OSLeg struct {
	Support Support
	// Rung is the step of the plugin's mechanism ladder (1-3), 0 when undeclared.
	Rung      int
	Mechanism string
	Fallback  string
}

// Request is one command as the handler sees it.
type Request struct {
	CommandID string
	Action    string
	Params    params.Params
	// Deadline is when the agent gives up; ctx carries it too. Zero means none.
	Deadline time.Time
	// Config is what the agent said in Configure.
	Config Config
	// Log is the plugin's logger, with the command id attached.
	Log hclog.Logger
}

// Config is what the agent hands the plugin before any command.
type Config struct {
	AgentID      string
	AgentVersion string
	// DataDir is the agent's data directory. A plugin that needs private state makes
	// its own sub-directory there.
	DataDir  string
	LogLevel string
}

// Handler runs one action. It writes rows to out and returns the result. ctx is
// cancelled when the command's deadline passes, the agent cancels it, or the plugin is
// asked to stop; a handler that ignores ctx is killed after a grace period.
// Handlers may run concurrently for different commands.
type Handler func(ctx context.Context, req *Request, out *Output) Result

// Action is a registered action.
type Action struct {
	Name        string
	Description string
	Linux       OSLeg
	Darwin      OSLeg
	Windows     OSLeg
	handler     Handler
}

// ActionOption sets an optional property of an action.
type ActionOption func(*Action)

// Describe sets the action's description.
func Describe(text string) ActionOption { return func(a *Action) { a.Description = text } }

// Supported declares the same support on Linux, macOS and Windows.
func Supported(leg OSLeg) ActionOption {
	return func(a *Action) { a.Linux, a.Darwin, a.Windows = leg, leg, leg }
}

// OnLinux declares the action's support on Linux.
func OnLinux(leg OSLeg) ActionOption { return func(a *Action) { a.Linux = leg } }

// OnDarwin declares the action's support on macOS.
func OnDarwin(leg OSLeg) ActionOption { return func(a *Action) { a.Darwin = leg } }

// OnWindows declares the action's support on Windows.
func OnWindows(leg OSLeg) ActionOption { return func(a *Action) { a.Windows = leg } }

// Plugin is a plugin's identity and its actions.
type Plugin struct {
	Name         string
	Version      string
	Description  string
	Capabilities []string

	actions   []*Action
	byName    map[string]*Action
	configure func(ctx context.Context, cfg Config) error
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

// New returns a plugin with no actions. name is a short id of letters, digits and
// underscores; the agent refuses any other.
func New(name, version, description string) *Plugin {
	return &Plugin{Name: name, Version: version, Description: description, byName: map[string]*Action{}}
}

// Handle registers an action. Registering the same name twice panics: it is a
// programming error found by the first test run.
func (p *Plugin) Handle(name string, h Handler, opts ...ActionOption) {
	if _, dup := p.byName[name]; dup {
		panic(fmt.Sprintf("sdk: action %q registered twice", name))
	}
	if h == nil {
		panic(fmt.Sprintf("sdk: action %q has a nil handler", name))
	}
	a := &Action{Name: name, handler: h}
	for _, o := range opts {
		o(a)
	}
	p.actions = append(p.actions, a)
	p.byName[name] = a
}

// OnConfigure sets a function called when the agent configures the plugin, before
// any command. An error fails the plugin's start; the agent reports it.
func (p *Plugin) OnConfigure(f func(ctx context.Context, cfg Config) error) { p.configure = f }

// Actions returns the registered actions in registration order.
func (p *Plugin) Actions() []Action {
	out := make([]Action, len(p.actions))
	for i, a := range p.actions {
		out[i] = *a
	}
	return out
}

// Validate reports what is wrong with the plugin's identity, if anything.
func (p *Plugin) Validate() error {
	if !nameRE.MatchString(p.Name) {
		return fmt.Errorf("plugin name %q: want 1-64 letters, digits or underscores", p.Name)
	}
	if p.Version == "" {
		return fmt.Errorf("plugin %s: empty version", p.Name)
	}
	if len(p.actions) == 0 {
		return fmt.Errorf("plugin %s: no actions", p.Name)
	}
	return nil
}
