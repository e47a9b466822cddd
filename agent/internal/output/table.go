package output

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/yuzugo/yuzu/agent/internal/capture"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// maxTableRows bounds the rows a table holds to measure its columns. Past it the
// tables so far are printed and new ones begin, with their headers again: a command
// of a million rows must not hold them all for the sake of alignment.
const maxTableRows = 10000

// tableWriter prints rows as aligned columns for a person: one table per row kind
// (and shape), in the order the kinds first appear, each under a header of the
// declared column names, then the capture format's trailer. Every cell is escaped as
// the capture format escapes a row, and a tab too, so no cell can move the cursor or
// break the alignment.
type tableWriter struct {
	w     *bufio.Writer
	kinds kinds

	tables []*table
	byKey  map[string]*table
	held   int  // rows held in tables
	wrote  bool // some table was printed
}

// table is the rows of one kind and shape.
type table struct {
	header []string
	cells  [][]string
	widths []int
}

func newTableWriter(w io.Writer) *tableWriter {
	return &tableWriter{w: bufio.NewWriterSize(w, 64<<10), kinds: newKinds(nil), byKey: map[string]*table{}}
}

func (t *tableWriter) Declare(decl []sdk.RowKind) { t.kinds = newKinds(decl) }

func (t *tableWriter) Rows(batch []string) error {
	for _, r := range batch {
		t.add(t.kinds.cut(r))
		if t.held >= maxTableRows {
			t.flushTables()
		}
	}
	return nil
}

func (t *tableWriter) add(r row) {
	key := "values\x00" + r.kind
	if r.names != nil {
		key = "fields\x00" + r.kind
	}
	tb, ok := t.byKey[key]
	if !ok {
		tb = &table{header: []string{"KIND"}}
		for _, n := range r.names {
			tb.header = append(tb.header, strings.ToUpper(cell(n)))
		}
		tb.widths = make([]int, len(tb.header))
		for i, h := range tb.header {
			tb.widths[i] = utf8.RuneCountInString(h)
		}
		t.byKey[key] = tb
		t.tables = append(t.tables, tb)
	}
	line := make([]string, 0, 1+len(r.values))
	line = append(line, cell(r.kind))
	for _, v := range r.values {
		line = append(line, cell(v))
	}
	// Unnamed values: the header grows to the longest row of its table.
	for len(tb.header) < len(line) {
		h := "FIELD" + strconv.Itoa(len(tb.header))
		tb.header = append(tb.header, h)
		tb.widths = append(tb.widths, len(h))
	}
	for i, c := range line {
		tb.widths[i] = max(tb.widths[i], utf8.RuneCountInString(c))
	}
	tb.cells = append(tb.cells, line)
	t.held++
}

// cell escapes a field for a table: as a capture row, and a tab as \x09.
func cell(s string) string {
	s = rows.Printable(s)
	if strings.Contains(s, "\t") {
		s = strings.ReplaceAll(s, "\t", `\x09`)
	}
	return s
}

func (t *tableWriter) flushTables() {
	for _, tb := range t.tables {
		if t.wrote {
			t.w.WriteByte('\n')
		}
		t.wrote = true
		tb.writeLine(t.w, tb.header)
		for _, line := range tb.cells {
			tb.writeLine(t.w, line)
		}
	}
	t.tables, t.byKey, t.held = nil, map[string]*table{}, 0
}

// writeLine pads each cell but the last to its column's width, two spaces apart.
func (tb *table) writeLine(w *bufio.Writer, line []string) {
	for i, c := range line {
		w.WriteString(c)
		if i < len(line)-1 {
			w.WriteString(strings.Repeat(" ", tb.widths[i]-utf8.RuneCountInString(c)+2))
		}
	}
	w.WriteByte('\n')
}

// Result prints the tables, then a blank line and the capture trailer.
func (t *tableWriter) Result(res sdk.Result) error {
	t.flushTables()
	if t.wrote {
		t.w.WriteByte('\n')
	}
	if err := capture.New(t.w).Result(res); err != nil {
		return err
	}
	return t.w.Flush()
}

func (t *tableWriter) AgentError(msg string) int { return agentError(t, msg) }
