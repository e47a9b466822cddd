// Package capture prints a command's outcome in the capture format (docs/agent.md): the
// rows as they arrive, then `[result_status] STATUS / COMPLETENESS[ / provenance]`,
// then `[rc] N` when the return code is not 0.
package capture

import (
	"bufio"
	"io"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// Printer writes one command's outcome.
type Printer struct {
	w *bufio.Writer
}

// New returns a Printer writing to w.
func New(w io.Writer) *Printer { return &Printer{w: bufio.NewWriterSize(w, 64<<10)} }

// Rows prints a batch of rows, one per line. Everything printed comes from a plugin,
// so every control byte (ESC, NUL, a stray CR...) is escaped: a row can neither forge
// another line of output nor drive the terminal.
func (p *Printer) Rows(batch []string) error {
	for _, r := range batch {
		p.w.WriteString(rows.Printable(r))
		p.w.WriteByte('\n')
	}
	return nil
}

// Result prints the trailer of a finished command and flushes. The provenance comes
// from the plugin and is escaped like a row field: it cannot end its line early.
func (p *Printer) Result(res sdk.Result) error {
	res.Provenance = rows.Printable(rows.Line(res.Provenance))
	p.w.WriteString(host.Trailer(res))
	return p.w.Flush()
}

// AgentError prints the answer to a failure of the agent rather than the plugin: one
// `error|<message>` row, UNDECLARED / UNKNOWN and rc 1. It returns the rc. The message
// may quote plugin-supplied text, so it is escaped like a row.
func (p *Printer) AgentError(msg string) int {
	res := sdk.Result{Code: 1}
	p.w.WriteString("error|" + rows.Printable(rows.Line(msg)) + "\n")
	_ = p.Result(res)
	return res.Code
}
