// Package row holds the one shape every firewall read produces: a row kind followed by
// raw field strings.
//
// Fields are kept exactly as gathered (names already folded by rows.Sanitize where
// the plugin does that). Escaping for the wire is the SDK's job, applied once when a
// row is written, so nothing here escapes.
package row

import "strings"

// Row is one output row: the kind (`backend`, `state`, `rule`, `error`, ...) and the
// fields that follow it.
type Row struct {
	Kind   string
	Fields []string
}

// New returns a row of the given kind and fields.
func New(kind string, fields ...string) Row {
	return Row{Kind: kind, Fields: fields}
}

// Text joins the kind and fields with `|` without any escaping. It is meant for tests
// and logs, where the raw form is the one worth comparing; output goes through the
// SDK's writer instead.
func (r Row) Text() string {
	if len(r.Fields) == 0 {
		return r.Kind
	}
	return r.Kind + "|" + strings.Join(r.Fields, "|")
}

// Texts returns Text for each row, in order.
func Texts(rows []Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Text()
	}
	return out
}
