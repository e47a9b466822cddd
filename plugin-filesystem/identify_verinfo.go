package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
)

// A parser for the Windows version resource (VS_VERSIONINFO) as GetFileVersionInfoW
// returns it, so get_version_info's decoding is a pure function tested on every
// system. The resource is a tree of nodes; each node is
//
//	u16 wLength       whole node in bytes, children included
//	u16 wValueLength  value length: bytes for binary values, UTF-16 units for text
//	u16 wType         1 text, 0 binary
//	UTF-16 key, NUL-terminated, then padding to a 4-byte boundary
//	value, then padding to a 4-byte boundary
//	children, each starting on a 4-byte boundary
//
// The root is "VS_VERSION_INFO" with a VS_FIXEDFILEINFO value; its children are
// "StringFileInfo" (string tables keyed by language and code page in 8 hex digits,
// holding the named strings) and "VarFileInfo" (its "Translation" value lists the
// language and code page pairs).

// errVersionResource is wrapped by every parse error.
var errVersionResource = errors.New("malformed version resource")

// fixedSignature opens every VS_FIXEDFILEINFO.
const fixedSignature = 0xFEEF04BD

// verResource is what get_version_info reads from a version resource.
type verResource struct {
	// HasFixed is set when the resource carries a VS_FIXEDFILEINFO.
	HasFixed                       bool
	FileMS, FileLS, ProdMS, ProdLS uint32
	// Translations are language<<16 | code page, in resource order.
	Translations []uint32
	// Tables maps a string table's key, lower-cased ("040904b0"), to its strings.
	Tables map[string]map[string]string
	// TableOrder lists the tables' keys (lower-cased) in resource order.
	TableOrder []string
}

type verNode struct {
	key      string
	text     bool
	value    []byte
	children []byte
}

// readVerNode reads the node at the start of b and returns it with the number of
// bytes it takes, padding included.
func readVerNode(b []byte) (verNode, int, error) {
	var n verNode
	if len(b) < 6 {
		return n, 0, fmt.Errorf("%w: node header cut short", errVersionResource)
	}
	length := int(binary.LittleEndian.Uint16(b))
	valueLen := int(binary.LittleEndian.Uint16(b[2:]))
	typ := binary.LittleEndian.Uint16(b[4:])
	if length < 6 || length > len(b) {
		return n, 0, fmt.Errorf("%w: node length %d outside 6..%d", errVersionResource, length, len(b))
	}
	node := b[:length]
	off := 6
	var key []uint16
	for {
		if off+2 > len(node) {
			return n, 0, fmt.Errorf("%w: unterminated key", errVersionResource)
		}
		c := binary.LittleEndian.Uint16(node[off:])
		off += 2
		if c == 0 {
			break
		}
		key = append(key, c)
	}
	n.key = string(utf16.Decode(key))
	n.text = typ == 1
	off = align4(off)
	size := valueLen
	if n.text {
		size *= 2
	}
	if off > len(node) {
		off = len(node)
	}
	if off+size > len(node) {
		if !n.text {
			return n, 0, fmt.Errorf("%w: value of %q runs past its node", errVersionResource, n.key)
		}
		// Some resource compilers count text values in bytes, not units; the
		// string ends at its NUL or at the node's end either way.
		size = len(node) - off
	}
	n.value = node[off : off+size]
	if c := align4(off + size); c < len(node) {
		n.children = node[c:]
	}
	return n, min(align4(length), len(b)), nil
}

// eachVerChild calls fn for each node in b, a run of sibling nodes.
func eachVerChild(b []byte, fn func(verNode) error) error {
	for len(b) >= 6 {
		if binary.LittleEndian.Uint16(b) == 0 {
			return nil // zero padding after the last child
		}
		n, size, err := readVerNode(b)
		if err != nil {
			return err
		}
		if err := fn(n); err != nil {
			return err
		}
		b = b[size:]
	}
	return nil
}

func align4(n int) int { return (n + 3) &^ 3 }

// utf16Text decodes a text value up to its first NUL.
func utf16Text(b []byte) string {
	u := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		c := binary.LittleEndian.Uint16(b[i:])
		if c == 0 {
			break
		}
		u = append(u, c)
	}
	return string(utf16.Decode(u))
}

// parseVersionInfo decodes a version resource. A resource whose structure is
// broken anywhere is refused as a whole.
func parseVersionInfo(b []byte) (verResource, error) {
	var r verResource
	root, _, err := readVerNode(b)
	if err != nil {
		return r, err
	}
	if root.key != "VS_VERSION_INFO" {
		return r, fmt.Errorf("%w: root key %q", errVersionResource, root.key)
	}
	if len(root.value) > 0 {
		v := root.value
		if len(v) < 52 || binary.LittleEndian.Uint32(v) != fixedSignature {
			return r, fmt.Errorf("%w: bad VS_FIXEDFILEINFO", errVersionResource)
		}
		r.HasFixed = true
		r.FileMS = binary.LittleEndian.Uint32(v[8:])
		r.FileLS = binary.LittleEndian.Uint32(v[12:])
		r.ProdMS = binary.LittleEndian.Uint32(v[16:])
		r.ProdLS = binary.LittleEndian.Uint32(v[20:])
	}
	r.Tables = map[string]map[string]string{}
	err = eachVerChild(root.children, func(n verNode) error {
		switch n.key {
		case "StringFileInfo":
			return eachVerChild(n.children, func(table verNode) error {
				key := strings.ToLower(table.key)
				strs := r.Tables[key]
				if strs == nil {
					strs = map[string]string{}
					r.Tables[key] = strs
					r.TableOrder = append(r.TableOrder, key)
				}
				return eachVerChild(table.children, func(s verNode) error {
					strs[s.key] = utf16Text(s.value)
					return nil
				})
			})
		case "VarFileInfo":
			return eachVerChild(n.children, func(v verNode) error {
				if v.key != "Translation" {
					return nil
				}
				for i := 0; i+3 < len(v.value); i += 4 {
					lang := uint32(binary.LittleEndian.Uint16(v.value[i:]))
					cp := uint32(binary.LittleEndian.Uint16(v.value[i+2:]))
					r.Translations = append(r.Translations, lang<<16|cp)
				}
				return nil
			})
		}
		return nil
	})
	return r, err
}

// versionStrings are the string table entries get_version_info reports, in row
// order, with their row names.
var versionStrings = [...]struct{ key, row string }{
	{"CompanyName", "company_name"},
	{"FileDescription", "file_description"},
	{"InternalName", "internal_name"},
	{"OriginalFilename", "original_filename"},
	{"ProductName", "product_name"},
	{"LegalCopyright", "legal_copyright"},
}

// fallbackTables are the string tables tried after the translations, in this order:
// US English in the Unicode code page, in Windows-1252, and with no code page, the
// tables Windows' own file properties fall back to.
var fallbackTables = [...]string{"040904b0", "040904e4", "04090000"}

// stringTable picks the string table get_version_info reports, the first of these
// that exists in the resource: the table of each translation VarFileInfo\Translation
// lists, in its order; then the fallbackTables; then the first table in the resource.
// Real files name translations they have no table for (a launcher whose only table is
// British English, 080904b0, while its translation says US English, 0409 04b0), and
// their strings are still theirs. It returns the table's key, or "" when the resource
// has no string table.
func stringTable(r verResource) string {
	for _, t := range r.Translations {
		if key := fmt.Sprintf("%04x%04x", t>>16, t&0xffff); r.Tables[key] != nil {
			return key
		}
	}
	for _, key := range fallbackTables {
		if r.Tables[key] != nil {
			return key
		}
	}
	if len(r.TableOrder) > 0 {
		return r.TableOrder[0]
	}
	return ""
}

// versionRows returns get_version_info's rows for a resource, as [kind, value]
// pairs: file_version and product_version from the fixed information, then the
// non-empty strings of the table stringTable picks. A resource without a string table
// has no string rows.
func versionRows(r verResource) [][2]string {
	var rows [][2]string
	dotted := func(ms, ls uint32) string {
		return fmt.Sprintf("%d.%d.%d.%d", ms>>16, ms&0xffff, ls>>16, ls&0xffff)
	}
	if r.HasFixed {
		rows = append(rows, [2]string{"file_version", dotted(r.FileMS, r.FileLS)},
			[2]string{"product_version", dotted(r.ProdMS, r.ProdLS)})
	}
	key := stringTable(r)
	if key == "" {
		return rows
	}
	table := r.Tables[key]
	for _, s := range versionStrings {
		if v := table[s.key]; v != "" {
			rows = append(rows, [2]string{s.row, v})
		}
	}
	return rows
}
