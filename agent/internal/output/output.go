// Package output prints a command's outcome in the format an operator asked for with
// --output (docs/agent.md "Output formats"): capture, the default, as the capture
// package prints it; json, one object; jsonl, one object a line; table, aligned
// columns for a person. Every format shows the same rows, status, completeness,
// provenance and rc.
package output

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/yuzugo/yuzu/agent/internal/capture"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// Format is an output format's name.
type Format string

// The formats.
const (
	Capture Format = "capture"
	JSON    Format = "json"
	JSONL   Format = "jsonl"
	Table   Format = "table"
)

// Formats lists the formats, the default first.
var Formats = []Format{Capture, JSON, JSONL, Table}

// Parse reads a format name; the empty name is Capture.
func Parse(name string) (Format, error) {
	if name == "" {
		return Capture, nil
	}
	if f := Format(name); slices.Contains(Formats, f) {
		return f, nil
	}
	return "", fmt.Errorf("unknown output format %q: want capture, json, jsonl or table", rows.Printable(name))
}

// Writer prints one command's outcome: Declare (optional), Rows as they arrive, then
// Result or AgentError once. capture.Printer is one, apart from Declare.
type Writer interface {
	// Declare gives the kinds of rows the action declares, so that their fields can
	// be named. Without it every row's fields are unnamed values.
	Declare(kinds []sdk.RowKind)
	// Rows prints a batch of rows.
	Rows(batch []string) error
	// Result prints the end of a finished command and flushes.
	Result(res sdk.Result) error
	// AgentError prints the answer to a failure of the agent rather than the plugin,
	// one `error|<message>` row, UNDECLARED / UNKNOWN and rc 1, and returns the rc.
	AgentError(msg string) int
}

// New returns a Writer of format f writing to w. An unknown f is Capture: Parse is
// where a name is checked.
func New(f Format, w io.Writer) Writer {
	switch f {
	case JSON:
		return newJSONWriter(w, false)
	case JSONL:
		return newJSONWriter(w, true)
	case Table:
		return newTableWriter(w)
	}
	return captureWriter{capture.New(w)}
}

// captureWriter is the capture format, which names no fields.
type captureWriter struct{ *capture.Printer }

func (captureWriter) Declare([]sdk.RowKind) {}

// agentErrorResult is what an agent-side failure answers, as capture.AgentError.
var agentErrorResult = sdk.Result{Code: 1}

// unknownActionPrefix starts the SDK's row for an action the plugin lacks.
const unknownActionPrefix = "unknown action: "

// errorColumns name the field of an `error|<message>` row, which no action declares.
var errorColumns = []string{"message"}

// row is one row cut into its fields.
type row struct {
	kind string
	// names are the declared column names, nil when the row does not match a
	// declaration: then values are unnamed.
	names  []string
	values []string
}

// kinds maps a row kind to its declared column names.
type kinds map[string][]string

// newKinds keeps the declarations that can name fields: a kind whose columns repeat a
// name is left out (an object cannot hold one key twice), its rows read as unnamed.
func newKinds(decl []sdk.RowKind) kinds {
	k := kinds{"error": errorColumns}
	for _, d := range decl {
		names := make([]string, 0, len(d.Columns))
		for _, c := range d.Columns {
			names = append(names, c.Name)
		}
		if hasDuplicate(names) {
			delete(k, d.Kind)
			continue
		}
		k[d.Kind] = names
	}
	return k
}

func hasDuplicate(names []string) bool {
	for i, n := range names {
		if slices.Contains(names[:i], n) {
			return true
		}
	}
	return false
}

// cut splits r by its declaration: the kind, then exactly as many fields as the kind
// declares columns, the last one the raw rest of the row (docs/sdk.md, row rules). A
// row of a kind not declared, or with fewer fields than declared, is cut at every
// unescaped `|` and its values are not named: a name on a value that may not be that
// column's would invent an answer.
func (k kinds) cut(r string) row {
	// The SDK's answer to an action a plugin does not have is the bare row
	// "unknown action: NAME" (no error| prefix, kept so on the wire for upstream
	// servers). Here it is what it means, an error row: read as a kind, a message
	// would pass for a column name.
	if strings.HasPrefix(r, unknownActionPrefix) && !strings.Contains(r, "|") {
		return row{kind: "error", names: errorColumns, values: []string{r}}
	}
	kind := rows.Split(r, 2)[0]
	if names, ok := k[kind]; ok {
		f := rows.Split(r, len(names)+1)
		// f[0] differs from kind only for a kind declared without columns whose row
		// has fields after all.
		if len(f) == len(names)+1 && f[0] == kind {
			return row{kind: f[0], names: names, values: f[1:]}
		}
	}
	f := rows.Split(r, 0)
	return row{kind: f[0], values: f[1:]}
}
