// Package manifest reads and writes plugins.sha256, the checksum manifest of the plugin
// directory. Its format is sha256sum's: one `<64 hex>  <file name>` line per plugin
// binary (`<hex> *<name>` from sha256sum -b is accepted too). The agent only runs a
// plugin binary whose SHA-256 matches its line here.
package manifest

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/safefile"
)

// FileName is the manifest's name inside the plugin directory.
const FileName = "plugins.sha256"

// Manifest maps a plugin binary's file name to its SHA-256 checksum.
type Manifest map[string][]byte

// Parse reads manifest text. Blank lines and lines starting with # are ignored; any
// other malformed line is an error naming its line number.
func Parse(data []byte) (Manifest, error) {
	m := Manifest{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sum, name, ok := strings.Cut(line, " ")
		if !ok || len(sum) != 64 || len(name) < 2 || (name[0] != ' ' && name[0] != '*') {
			return nil, fmt.Errorf("%s line %d: want `<sha256 hex>  <file name>`", FileName, n)
		}
		name = name[1:]
		if name == "" || strings.ContainsAny(name, `/\`) {
			return nil, fmt.Errorf("%s line %d: bad file name %q", FileName, n, name)
		}
		b, err := hex.DecodeString(sum)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: checksum is not hex", FileName, n)
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("%s line %d: %s listed twice", FileName, n, name)
		}
		m[name] = b
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", FileName, err)
	}
	return m, nil
}

// MaxBytes bounds the manifest: a line per plugin is about 80 bytes, so a megabyte is
// thousands of plugins; anything larger is not a manifest we wrote.
const MaxBytes = 1 << 20

// Read loads the manifest of dir. A missing manifest is an empty one and fs.ErrNotExist.
// The manifest decides what runs as root, so it must be a regular file (not a link, a
// FIFO or a device), at most MaxBytes, owned by root or the agent's user and writable
// by nobody else; otherwise Read refuses it, naming the path and the problem.
func Read(dir string) (Manifest, error) {
	path := filepath.Join(dir, FileName)
	f, fi, err := safefile.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Manifest{}, err
		}
		return nil, err
	}
	defer f.Close()
	if err := safefile.TrustedFile(f, fi, false); err != nil {
		return nil, fmt.Errorf("%s is %w", path, err)
	}
	data, err := safefile.ReadAll(f, fi, MaxBytes)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Format renders the manifest sorted by file name.
func (m Manifest) Format() []byte {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, n := range names {
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(m[n]), n)
	}
	return b.Bytes()
}

// Mode is the manifest's permission bits, whatever the umask: readable by all (it is
// no secret), writable only by its owner.
const Mode = 0o644

// Write replaces the manifest of dir atomically with mode 0644, which the new file has
// from its creation (no window in which the umask could leave it writable by others).
func (m Manifest) Write(dir string) error {
	return atomicfile.WriteMode(filepath.Join(dir, FileName), m.Format(), Mode)
}
