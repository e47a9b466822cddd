package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"unicode/utf8"

	"github.com/yuzugo/yuzu/sdk/safefile"
)

// maxTagsBytes bounds the read of tags.json. The tags plugin keeps keys to 64 bytes and
// values to 448, so a real file is far smaller; anything larger was not written by it.
const maxTagsBytes = 1 << 20

// ReadTags returns the device's tags from <dataDir>/tags.json, the file the tags
// plugin keeps, for AgentInfo.scopable_tags. A missing file means no tags. The file
// is decoded as JSON (escaped quotes and backslashes come out as the characters they
// stand for) and must be one object whose values are all strings; anything else is an
// error, and the caller registers without tags rather than with mangled ones. The file
// is opened as one someone else may have planted: no link, no FIFO, bounded.
func ReadTags(dataDir string) (map[string]string, error) {
	path := filepath.Join(dataDir, "tags.json")
	data, err := safefile.ReadFile(path, maxTagsBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tags: %w", err)
	}
	tags, err := parseTags(data)
	if err != nil {
		return nil, fmt.Errorf("tags: %s: %w", path, err)
	}
	return tags, nil
}

// parseTags decodes a tags.json document by the tags plugin's rules: valid UTF-8 (the
// plugin treats anything else as corrupt, so the agent must not report the replacement
// characters encoding/json would put in), one JSON object of strings, nothing after it.
func parseTags(data []byte) (map[string]string, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("not valid UTF-8")
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	tags := map[string]string{}
	if err := dec.Decode(&tags); err != nil {
		return nil, fmt.Errorf("not an object of strings: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON object")
	}
	return tags, nil
}
