package output

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/width"

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
// the capture format escapes a row (rows.Printable: a tab and every invisible format
// character too), so no cell can move the cursor, reorder its text or break the
// alignment; columns are measured in terminal cells (displayWidth).
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
			tb.widths[i] = displayWidth(h)
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
		tb.widths[i] = max(tb.widths[i], displayWidth(c))
	}
	tb.cells = append(tb.cells, line)
	t.held++
}

// cell escapes a field for a table, as the capture format escapes a row.
func cell(s string) string { return rows.Printable(s) }

// displayWidth is how many terminal cells s takes once escaped: a combining mark
// takes none (it sits on the character before it), an East Asian wide or fullwidth
// character two, any other one. ASCII, the common case, is its length.
func displayWidth(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			n = -1
			break
		}
	}
	if n == 0 {
		return len(s)
	}
	n = 0
	for _, r := range s {
		switch {
		case unicode.In(r, unicode.Mn, unicode.Me):
		case isWide(r):
			n += 2
		default:
			n++
		}
	}
	return n
}

// isWide: East Asian wide and fullwidth characters take two cells.
func isWide(r rune) bool {
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return true
	}
	return false
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
			w.WriteString(strings.Repeat(" ", tb.widths[i]-displayWidth(c)+2))
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

// Cell makes plugin-supplied text safe for one cell of a tab-aligned listing
// (text/tabwriter): printable, no tabs (which would shift the columns), "-" when empty.
func Cell(s string) string {
	if s == "" {
		return "-"
	}
	return strings.ReplaceAll(rows.Printable(s), "\t", " ")
}
