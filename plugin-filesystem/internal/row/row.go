// Package row is the one row type the filesystem plugin's internal packages build:
// a literal kind and raw field strings. The action handlers write rows with the SDK,
// which escapes every field; nothing here escapes.
package row

// Row is one output row before escaping.
type Row struct {
	Kind   string
	Fields []string
}
