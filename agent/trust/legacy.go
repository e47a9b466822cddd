package trust

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// LegacyName is the manifest of agents before the catalog: sha256sum's format, one
// `<64 hex>  <file name>` line per plugin binary (`<hex> *<name>` from sha256sum -b
// too). Load reads it once, when a plugin dir has no catalog yet, and moves it aside
// as LegacyName+".migrated".
const LegacyName = "plugins.sha256"

// maxLegacyBytes bounds the old manifest: a line per plugin is about 80 bytes.
const maxLegacyBytes = 1 << 20

// parseLegacy reads plugins.sha256 text into file name -> hex checksum. Blank lines and
// lines starting with # are ignored; any other malformed line is an error naming its
// line number.
func parseLegacy(data []byte) (map[string]string, error) {
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sum, name, ok := strings.Cut(line, " ")
		if !ok || len(sum) != 64 || len(name) < 2 || (name[0] != ' ' && name[0] != '*') {
			return nil, fmt.Errorf("%s line %d: want `<sha256 hex>  <file name>`", LegacyName, n)
		}
		name = name[1:]
		if name == "" || strings.ContainsAny(name, `/\`) {
			return nil, fmt.Errorf("%s line %d: bad file name %q", LegacyName, n, name)
		}
		if strings.Trim(strings.ToLower(sum), "0123456789abcdef") != "" {
			return nil, fmt.Errorf("%s line %d: checksum is not hex", LegacyName, n)
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("%s line %d: %s listed twice", LegacyName, n, name)
		}
		m[name] = strings.ToLower(sum)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", LegacyName, err)
	}
	return m, nil
}

// migrate makes the catalog of a plugin dir that has only a plugins.sha256: each
// listed plugin binary becomes an entry pinned by its checksum alone. A line for a file
// that is not named like a plugin binary is dropped (the agent never ran it). The
// catalog is written and the old file renamed; when that fails (a read-only plugin
// dir), the catalog is used from memory and MigrationErr says why.
func migrate(dir string) (*Catalog, error) {
	legacy := filepath.Join(dir, LegacyName)
	data, err := readTrusted(legacy, maxLegacyBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w (nor a %s to make one from)", ErrNoCatalog, LegacyName)
	}
	if err != nil {
		return nil, err
	}
	sums, err := parseLegacy(data)
	if err != nil {
		return nil, err
	}
	c := &Catalog{Format: Format, Plugins: map[string]*Entry{}}
	for file, sum := range sums {
		name, ok := PluginName(file)
		if !ok {
			continue
		}
		e := &Entry{File: file, SHA256: sum, Source: LegacyName, Added: time.Now().UTC().Truncate(time.Second)}
		if err := e.check(name, true); err != nil {
			continue
		}
		e.name = name
		c.Plugins[name] = e
	}
	c.Migrated = len(c.Plugins)
	if err := c.Save(dir); err != nil {
		c.MigrationErr = err
		return c, nil
	}
	if err := os.Rename(legacy, legacy+".migrated"); err != nil {
		c.MigrationErr = err
	}
	return c, nil
}

// PluginName returns the plugin name a binary's file name stands for (without .exe),
// and whether the file name is a plugin binary's at all.
func PluginName(file string) (string, bool) {
	if !strings.HasPrefix(file, BinaryPrefix) {
		return "", false
	}
	name := strings.TrimSuffix(strings.TrimPrefix(file, BinaryPrefix), ".exe")
	return name, name != ""
}
