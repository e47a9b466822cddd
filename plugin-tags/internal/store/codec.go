package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrCorrupt is wrapped by Decode when the data is not a tags file: not JSON, not a
// JSON object, or an object with a value that is not a string.
var ErrCorrupt = errors.New("corrupt tags file")

// Decode parses the content of a tags.json file: one flat JSON object whose values are
// all strings. Anything else is corrupt: upstream skipped non-string
// values and loaded garbage as an empty store, which let the next write destroy data
// nobody had looked at. Invalid UTF-8 is corrupt too, because encoding/json would
// silently replace it and the next write would lose the original bytes. When a key
// appears twice, the last value wins, as in encoding/json.
func Decode(data []byte) (map[string]string, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%w: not valid UTF-8", ErrCorrupt)
	}
	// json.Unmarshal accepts `null` for a map and leaves it nil, so the object shape
	// is checked before decoding.
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrCorrupt)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	tags := make(map[string]string, len(raw))
	for k, v := range raw {
		if len(v) == 0 || v[0] != '"' {
			return nil, fmt.Errorf("%w: value of %q is not a string", ErrCorrupt, k)
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, fmt.Errorf("%w: value of %q: %v", ErrCorrupt, k, err)
		}
		tags[k] = s
	}
	return tags, nil
}

// Encode renders tags the way upstream writes tags.json: one flat
// object, keys sorted, 2-space indent, `": "` between key and value, no trailing
// newline, `{}` for an empty map. HTML characters (<, >, &) are kept as they are so
// the file stays readable and byte-identical to upstream's for the same tags.
func Encode(tags map[string]string) ([]byte, error) {
	if len(tags) == 0 {
		return []byte("{}"), nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	// encoding/json sorts map keys, which gives the sorted file. It replaces invalid
	// UTF-8 with U+FFFD rather than failing, so an error here is not expected.
	if err := enc.Encode(tags); err != nil {
		return nil, fmt.Errorf("encode tags: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
