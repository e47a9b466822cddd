package rows

import "strings"

// Row is a row held before it is written: a kind and the raw fields that follow it.
// It is for a plugin's own packages that gather rows away from the handler (a parser,
// a per-system reader) and return them as a slice; the handler then writes each one
// with out.Row(r.Kind, r.Fields...), which is where the escaping happens. A Row is
// never escaped itself, so a test compares what was gathered, not the wire form.
type Row struct {
	Kind   string
	Fields []string
}

// New returns a row of the given kind and fields.
func New(kind string, fields ...string) Row {
	return Row{Kind: kind, Fields: fields}
}

// Text joins the kind and fields with `|` and escapes nothing. It is meant for tests
// and logs, where the raw form is the one worth comparing; output goes through the
// SDK's writer (Format) instead.
func (r Row) Text() string {
	if len(r.Fields) == 0 {
		return r.Kind
	}
	return r.Kind + "|" + strings.Join(r.Fields, "|")
}

// Texts returns Text for each row, in order.
func Texts(rs []Row) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Text()
	}
	return out
}
