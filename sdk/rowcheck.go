package sdk

import (
	"strconv"
	"strings"
)

// RowMismatch says how one written row departs from its action's declared rows.
type RowMismatch struct {
	// Kind is the declared kind the row claims, or UndeclaredKind for a kind the
	// action does not declare: a bounded label, safe for a metric.
	Kind string
	// Reason says what is wrong, quoting at most a little of the row.
	Reason string
}

// UndeclaredKind is RowMismatch.Kind for a row whose kind the action does not declare.
const UndeclaredKind = "(undeclared)"

// CheckRow checks one row, as the action wrote it, against the action's declared
// rows: its kind is declared, it has every declared field, and each typed field
// parses as its type (int32 and int64 in full, bool as true or false). It returns nil
// for a row that agrees, for an `error` row (which needs no declaration), and for any
// row of an action that declares no rows at all: such an action made no claim to
// check. The last field is free text, so a row can carry more `|` than it declares,
// never fewer fields. It does not allocate for a row that agrees.
func (a *Action) CheckRow(row string) *RowMismatch {
	if len(a.Rows) == 0 {
		return nil
	}
	kind, rest, hasFields := cutField(row)
	if kind == "error" {
		return nil
	}
	for i := range a.Rows {
		rk := &a.Rows[i]
		if rk.Kind != kind {
			continue
		}
		if len(rk.Columns) == 0 {
			if hasFields {
				return &RowMismatch{Kind: rk.Kind, Reason: "row " + rk.Kind + " declares no fields but has some"}
			}
			return nil
		}
		if !hasFields {
			return &RowMismatch{Kind: rk.Kind, Reason: "row " + rk.Kind + " has none of its " + strconv.Itoa(len(rk.Columns)) + " declared fields"}
		}
		return checkFields(rk, rest)
	}
	return &RowMismatch{Kind: UndeclaredKind, Reason: "row kind " + strconv.Quote(clip(kind)) + " is not declared by action " + a.Name}
}

// checkFields checks the fields after the kind: one per column, the last taking the
// rest of the row.
func checkFields(rk *RowKind, rest string) *RowMismatch {
	for i, col := range rk.Columns {
		var field string
		if i == len(rk.Columns)-1 {
			field = rest
		} else {
			var more bool
			field, rest, more = cutField(rest)
			if !more {
				return &RowMismatch{Kind: rk.Kind, Reason: "row " + rk.Kind + " has " + strconv.Itoa(i+1) + " of its " + strconv.Itoa(len(rk.Columns)) + " declared fields"}
			}
		}
		if !typeParses(col.Type, field) {
			return &RowMismatch{Kind: rk.Kind, Reason: "row " + rk.Kind + " field " + col.Name + " is " + strconv.Quote(clip(field)) + ", not " + string(col.Type)}
		}
	}
	return nil
}

// cutField cuts s at its first `|` that is not escaped as `\|` (the rows package's
// rule). The field is returned raw: a typed field never holds an escape.
func cutField(s string) (field, rest string, found bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) && s[i+1] == '|' {
				i++
			}
		case '|':
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// typeParses reports whether a field's text reads as its column's type.
func typeParses(t Type, s string) bool {
	switch t {
	case TypeInt32:
		_, err := strconv.ParseInt(s, 10, 32)
		return err == nil
	case TypeInt64:
		_, err := strconv.ParseInt(s, 10, 64)
		return err == nil
	case TypeBool:
		return s == "true" || s == "false"
	}
	return true
}

// clip bounds row text quoted in a mismatch.
func clip(s string) string {
	const most = 64
	if len(s) <= most {
		return s
	}
	return strings.ToValidUTF8(s[:most], "") + "..."
}
