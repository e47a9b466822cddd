// Package sdk is everything a yuzu plugin author imports.
//
// A plugin is a child process the agent starts and talks to over gRPC. Its main
// function builds a Plugin, declares its actions and calls Serve:
//
//	func main() {
//		p := sdk.New("hello", "1.0.0", "Says hello")
//		p.Handle("greet", greet,
//			sdk.Describe("Greets someone"),
//			sdk.Param("name", sdk.TypeString, "Who to greet", sdk.Required(), sdk.MaxLength(64)),
//			sdk.Row("greeting", "text"),
//		)
//		sdk.Serve(p)
//	}
//
//	func greet(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
//		out.Row("greeting", "Hello, "+req.Params.Get("name", "")+"!")
//		return sdk.Done(), nil
//	}
//
// An action declares its parameters (Param) and the rows it writes (Row); the SDK
// checks every declared parameter before the handler runs, and the agent shows the
// declarations in `yuzu-agent describe`. A plugin ships its InstructionDefinitions
// inside its binary (Plugin.Definitions); `sdktest.CheckDefinitions` proves they agree
// with the declarations.
//
// The SDK owns the handshake, the stdout guard (stdout belongs to the handshake; stray
// writes become log lines), JSON logging to stderr, SIGTERM handling, exiting when the
// agent is gone (and taking everything the plugin started with it), row escaping,
// parameter semantics and the streaming of rows. Sub-packages give the rest: params,
// rows, atomicfile, subprocess, proctree, definition and sdktest.
package sdk

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/sdk/params"
)

// Version is the SDK version a plugin reports in its manifest.
const Version = "1.0.0"

// Status is the typed status a command may declare. Most commands declare none
// (StatusUndeclared); a command that worked with a known limitation declares
// StatusConstrained with a provenance saying why.
type Status int

// Statuses, with the numbers the fleet server stores.
const (
	StatusUndeclared       Status = 0
	StatusOK               Status = 1
	StatusUnavailable      Status = 2
	StatusPermissionDenied Status = 3
	StatusConstrained      Status = 4
)

var statusNames = [...]string{"UNDECLARED", "OK", "UNAVAILABLE", "PERMISSION_DENIED", "CONSTRAINED"}

// String returns the status's name, e.g. "CONSTRAINED"; a value outside the list reads
// as UNDECLARED.
func (s Status) String() string { return statusNames[s.Known()] }

// Known returns s when it is one of the statuses above and StatusUndeclared otherwise:
// a number no one defined declares nothing.
func (s Status) Known() Status {
	if s < 0 || int(s) >= len(statusNames) {
		return StatusUndeclared
	}
	return s
}

// Completeness says whether a command's rows are the whole answer.
type Completeness int

// Completeness values, with the numbers the fleet server stores.
const (
	CompletenessUnknown Completeness = 0
	CompletenessFull    Completeness = 1
	CompletenessPartial Completeness = 2
)

var completenessNames = [...]string{"UNKNOWN", "FULL", "PARTIAL"}

// String returns the completeness's name, e.g. "PARTIAL"; a value outside the list
// reads as UNKNOWN.
func (c Completeness) String() string { return completenessNames[c.Known()] }

// Known returns c when it is one of the values above and CompletenessUnknown
// otherwise.
func (c Completeness) Known() Completeness {
	if c < 0 || int(c) >= len(completenessNames) {
		return CompletenessUnknown
	}
	return c
}

// Result ends a command. A handler ends with one of four calls:
//
//	return sdk.Done(), nil             // worked; says nothing about completeness
//	return sdk.Complete(), nil         // worked; the rows are the whole answer
//	return sdk.Partial("why"), nil     // worked; a known limitation left rows out
//	return out.Fail("what went wrong"), nil // failed: one error row, rc 1
//
// Returning a Go error fails the command the same way out.Fail does, with the error's
// text as the row; use whichever reads better at the call site.
type Result struct {
	// Code is the return code: 0 for success, 1 for failure in the shipped plugins.
	Code         int
	Status       Status
	Completeness Completeness
	// Provenance names the cause of a limitation, e.g. "tags:persist_failed".
	Provenance string
}

// Done is rc 0 with UNDECLARED / UNKNOWN: the command worked and says nothing about
// how complete its answer is. Most upstream-compatible actions end this way.
func Done() Result { return Result{} }

// Complete is rc 0 with OK / FULL: the command worked and its rows are the whole
// answer.
func Complete() Result { return Result{Status: StatusOK, Completeness: CompletenessFull} }

// Partial is rc 0 with CONSTRAINED / PARTIAL and the given provenance: the command
// worked, but a known limitation means the rows are not the whole answer.
func Partial(provenance string) Result {
	return Result{Status: StatusConstrained, Completeness: CompletenessPartial, Provenance: provenance}
}

// failed is the result of a failed command: rc 1, nothing declared.
var failed = Result{Code: 1}

// SupportLevel says how well an operating system supports an action (the numbers the
// fleet server stores).
type SupportLevel int

// Support levels.
const (
	SupportUndeclared  SupportLevel = 0 // the plugin says nothing
	SupportUnsupported SupportLevel = 1 // the action answers "not supported" there
	SupportPlanned     SupportLevel = 2 // not built yet
	SupportConstrained SupportLevel = 3 // works, with a documented limitation
	SupportSupported   SupportLevel = 4 // works fully
)

var supportNames = [...]string{"undeclared", "unsupported", "planned", "constrained", "supported"}

// String returns the lower-case name, e.g. "supported".
func (s SupportLevel) String() string {
	if s < 0 || int(s) >= len(supportNames) {
		return supportNames[0]
	}
	return supportNames[s]
}

// Available reports whether an action at this level can be dispatched to that OS:
// supported or constrained.
func (s SupportLevel) Available() bool {
	return s == SupportSupported || s == SupportConstrained
}

// OSSupport is one operating system's support for an action.
type OSSupport struct {
	Level SupportLevel
	// Mechanism names how the action does its work there, e.g. "nftables" or
	// "local_json_store".
	Mechanism string
	// Fallback says what the action does when Mechanism is not available there, e.g.
	// "falls through to ufw".
	Fallback string
	// Rung is Mechanism's position in the ordered list of mechanisms the action tries
	// on that OS (1 = tried first), for actions that try several; 0 leaves it unstated.
	Rung int
}

// Request is one command as the handler sees it.
type Request struct {
	// CommandID is the fleet server's id for the command; empty for local runs.
	CommandID string
	Action    string
	Params    params.Params
	// Deadline is when the agent gives up; ctx carries it too. Zero means none.
	Deadline time.Time
	// Config is what the agent said in Configure.
	Config Config
	// Log is the plugin's logger, with the action (and the command id, when there is
	// one) attached. Its lines show in the agent's log.
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

// Handler runs one action. It writes rows to out and returns the result. A non-nil
// error ends the command with the row `error|<err>` and rc 1, whatever the Result.
//
// ctx is cancelled when the command's deadline passes, the agent cancels it, or the
// plugin is asked to stop; a handler that ignores ctx is killed after a grace period.
// Handlers may run concurrently for different commands.
type Handler func(ctx context.Context, req *Request, out *Output) (Result, error)
