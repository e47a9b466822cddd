// Package agentconf reads the agent's configuration file, /etc/yuzu/agent.yaml by
// default: the same settings as the command line flags, by the flags' own names, plus
// a `plugins` section of per-plugin settings. It only reads and checks the file's
// shape; the command line layers it under flags and environment (docs/operations.md,
// "Configuration file").
package agentconf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/rows"
	"github.com/yuzugo/yuzu/sdk/safefile"
)

// MaxBytes bounds the file: a configuration is a few hundred bytes, and the agent,
// running as root, must not read a huge file someone planted.
const MaxBytes = 256 << 10

// DefaultPath is where the configuration file is looked for when neither --config nor
// YUZU_CONFIG names one: /etc/yuzu/agent.yaml, on Windows %ProgramData%\yuzu\agent.yaml,
// on macOS /Library/Application Support/yuzu/agent.yaml.
func DefaultPath(goos string, getenv func(string) string) string {
	switch goos {
	case "windows":
		return SystemDir(goos, getenv) + `\agent.yaml`
	case "darwin":
		return "/Library/Application Support/yuzu/agent.yaml"
	}
	return "/etc/yuzu/agent.yaml"
}

// DataDir is the default state directory for goos. An agent that runs as root
// or as a service (system) keeps its state in the machine's directory: /var/lib/yuzu,
// Windows %ProgramData%\yuzu, macOS /Library/Application Support/yuzu, never root's
// home. A user's agent keeps it in the user's: Windows %LOCALAPPDATA%\yuzu, macOS
// ~/Library/Application Support/yuzu, elsewhere $XDG_DATA_HOME/yuzu else
// ~/.local/share/yuzu; ./yuzu_data when none applies. docs/operations.md, "Paths".
func DataDir(goos string, getenv func(string) string, system bool) string {
	if system {
		return SystemDir(goos, getenv)
	}
	home := getenv("HOME")
	switch goos {
	case "windows":
		if d := getenv("LOCALAPPDATA"); d != "" {
			return d + `\yuzu`
		}
	case "darwin":
		if home != "" {
			return filepath.Join(home, "Library", "Application Support", "yuzu")
		}
	default:
		if d := getenv("XDG_DATA_HOME"); d != "" {
			return filepath.Join(d, "yuzu")
		}
		if home != "" {
			return filepath.Join(home, ".local", "share", "yuzu")
		}
	}
	return "yuzu_data"
}

// SystemDir is the machine-wide yuzu directory on Windows (%ProgramData%\yuzu, else
// C:\ProgramData\yuzu) and macOS; on other systems the data dir /var/lib/yuzu.
func SystemDir(goos string, getenv func(string) string) string {
	switch goos {
	case "windows":
		pd := getenv("ProgramData")
		if pd == "" || !filepath.IsAbs(pd) && !strings.Contains(pd, `:\`) {
			pd = `C:\ProgramData`
		}
		return strings.TrimRight(pd, `\`) + `\yuzu`
	case "darwin":
		return "/Library/Application Support/yuzu"
	}
	return "/var/lib/yuzu"
}

// Kind is what a setting's value must look like in the file.
type Kind int

const (
	// Text is any scalar, kept as written and checked by whoever uses it.
	Text Kind = iota
	// Switch is a boolean: true/false (or the words a flag accepts).
	Switch
)

// Value is one setting as the file holds it.
type Value struct {
	Text string
	Line int
}

// Plugin is the `plugins.NAME` section.
type Plugin struct {
	Line int
	// Enabled is false when the file says `enabled: false`; nil when it says nothing.
	Enabled *bool
	// Limits is a limits entry, e.g. "memory_mib=256,cpus=0.5", empty when none
	// (agent/internal/limits checks it).
	Limits     string
	LimitsLine int
	// IdleStop is `idle-stop`, how long a plugin's child may sit with no command
	// before the agent stops it; 0 is never. IdleStopLine is its line, 0 when the
	// file does not set it.
	IdleStop     time.Duration
	IdleStopLine int
}

// File is a configuration file read and checked.
type File struct {
	Path     string
	Settings map[string]Value
	Plugins  map[string]Plugin
	// Readable says who besides the trusted accounts can read the file (nil: no one),
	// as Load found it: a file that holds a secret setting should be private.
	Readable error
}

// Line is what an error names: the file and line.
func (f *File) Line(n int) string { return fmt.Sprintf("%s:%d", f.Path, n) }

// Load reads path. keys are the settings a file may hold (the flags' names) with
// their kinds. A missing file gives an error wrapping fs.ErrNotExist. The file must be
// a regular file (no link is followed), owned by root or the agent's user and not
// writable by group or others (on Windows: owned by SYSTEM, Administrators,
// TrustedInstaller or the agent's user, with a DACL that lets nobody else write it,
// read from the open file by safefile.TrustedFile), and at most MaxBytes: the agent
// runs as root and takes TLS files and plugin limits from it.
func Load(path string, keys map[string]Kind) (*File, error) {
	f, fi, err := safefile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := safefile.TrustedFile(f, fi, false); err != nil {
		return nil, fmt.Errorf("configuration file %s: %w", path, err)
	}
	b, err := safefile.ReadAll(f, fi, MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("configuration file %s: %w", path, err)
	}
	cf, err := Parse(path, b, keys)
	if err != nil {
		return nil, err
	}
	cf.Readable = safefile.Private(f, fi)
	return cf, nil
}

// Parse checks a file's bytes; path only names it in errors.
func Parse(path string, b []byte, keys map[string]Kind) (*File, error) {
	cf := &File{Path: path, Settings: map[string]Value{}, Plugins: map[string]Plugin{}}
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%s: not valid UTF-8", path)
	}
	// One document only: a second one after "---" would be read by nothing, so the
	// settings in it would be silently lost.
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s: %s", path, rows.Printable(err.Error()))
	}
	for {
		var more yaml.Node
		err := dec.Decode(&more)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %s", path, rows.Printable(err.Error()))
		}
		if !emptyDoc(&more) {
			return nil, fmt.Errorf("%s: a second YAML document: the file must be one document (no second \"---\")", cf.Line(max(more.Line, 1)))
		}
	}
	if emptyDoc(&doc) {
		return cf, nil // empty file: nothing set
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: want a mapping of setting: value", cf.Line(root.Line))
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		name := k.Value
		if k.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%s: a key must be a name", cf.Line(k.Line))
		}
		if first, dup := seen[name]; dup {
			return nil, fmt.Errorf("%s: %s given twice (first on line %d)", cf.Line(k.Line), rows.Printable(name), first)
		}
		seen[name] = k.Line
		if name == "plugins" {
			if err := cf.plugins(v); err != nil {
				return nil, err
			}
			continue
		}
		kind, ok := keys[name]
		if !ok {
			return nil, fmt.Errorf("%s: unknown setting %q%s", cf.Line(k.Line), rows.Printable(name), hint(name, keys))
		}
		text, err := cf.scalar(name, v, kind)
		if err != nil {
			return nil, err
		}
		cf.Settings[name] = Value{Text: text, Line: v.Line}
	}
	return cf, nil
}

// emptyDoc is a document that sets nothing: none at all, or only "---" or a null.
func emptyDoc(d *yaml.Node) bool {
	if d.Kind == 0 || len(d.Content) == 0 {
		return true
	}
	r := d.Content[0]
	return len(d.Content) == 1 && r.Kind == yaml.ScalarNode && r.Tag == "!!null"
}

// hint suggests the flag spelling for a key written with underscores.
func hint(name string, keys map[string]Kind) string {
	if alt := strings.ReplaceAll(name, "_", "-"); alt != name {
		if _, ok := keys[alt]; ok {
			return fmt.Sprintf(" (did you mean %s?)", alt)
		}
	}
	return ""
}

// scalar returns a setting's value as text; a Switch must be a boolean.
func (cf *File) scalar(name string, v *yaml.Node, kind Kind) (string, error) {
	if v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	if v.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("%s: %s: want a single value", cf.Line(v.Line), name)
	}
	if v.Tag == "!!null" {
		return "", fmt.Errorf("%s: %s: no value given", cf.Line(v.Line), name)
	}
	if kind == Switch {
		switch strings.ToLower(v.Value) {
		case "true", "yes", "on", "1":
			return "true", nil
		case "false", "no", "off", "0":
			return "false", nil
		}
		return "", fmt.Errorf("%s: %s: %q: want true or false", cf.Line(v.Line), name, rows.Printable(v.Value))
	}
	if strings.ContainsAny(v.Value, "\x00\n\r") {
		return "", fmt.Errorf("%s: %s: the value holds a line break or NUL", cf.Line(v.Line), name)
	}
	return v.Value, nil
}

// plugins reads the `plugins:` section: NAME: {enabled, limits, idle-stop}.
func (cf *File) plugins(n *yaml.Node) error {
	if n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("%s: plugins: want a mapping of plugin name to its settings", cf.Line(n.Line))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		if k.Kind != yaml.ScalarNode || !sdk.ValidName(name) {
			return fmt.Errorf("%s: plugins: %q is not a plugin name", cf.Line(k.Line), rows.Printable(name))
		}
		if _, dup := cf.Plugins[name]; dup {
			return fmt.Errorf("%s: plugins: %s given twice", cf.Line(k.Line), name)
		}
		p := Plugin{Line: k.Line}
		if v.Kind != yaml.MappingNode {
			return fmt.Errorf("%s: plugins.%s: want a mapping of enabled, limits, idle-stop", cf.Line(v.Line), name)
		}
		seen := map[string]bool{}
		for j := 0; j+1 < len(v.Content); j += 2 {
			sk, sv := v.Content[j], v.Content[j+1]
			where := "plugins." + name + "." + sk.Value
			if seen[sk.Value] {
				return fmt.Errorf("%s: %s given twice", cf.Line(sk.Line), rows.Printable(where))
			}
			seen[sk.Value] = true
			switch sk.Value {
			case "enabled":
				t, err := cf.scalar(where, sv, Switch)
				if err != nil {
					return err
				}
				on := t == "true"
				p.Enabled = &on
			case "limits":
				l, err := cf.limits(where, sv)
				if err != nil {
					return err
				}
				p.Limits, p.LimitsLine = l, sv.Line
			case "idle-stop":
				t, err := cf.scalar(where, sv, Text)
				if err != nil {
					return err
				}
				d, err := time.ParseDuration(t)
				if t == "0" {
					d, err = 0, nil // 0 (no unit) is never, as on the command line
				}
				if err != nil || d < 0 {
					return fmt.Errorf("%s: %s: %q: want a duration like 10m, or 0 for never", cf.Line(sv.Line), where, rows.Printable(t))
				}
				p.IdleStop, p.IdleStopLine = d, sv.Line
			default:
				return fmt.Errorf("%s: unknown setting %q (a plugin has enabled, limits, idle-stop)", cf.Line(sk.Line), rows.Printable(where))
			}
		}
		cf.Plugins[name] = p
	}
	return nil
}

// limitKeys are the keys of a plugin's limits, as agent/internal/limits names them.
var limitKeys = map[string]bool{"memory_mib": true, "cpus": true, "tasks": true}

// limits turns `limits: {memory_mib: 256, cpus: 0.5}` into "memory_mib=256,cpus=0.5".
func (cf *File) limits(where string, n *yaml.Node) (string, error) {
	if n.Kind != yaml.MappingNode {
		return "", fmt.Errorf("%s: %s: want a mapping of memory_mib, cpus, tasks", cf.Line(n.Line), where)
	}
	var kv []string
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !limitKeys[k.Value] {
			return "", fmt.Errorf("%s: unknown setting %q (limits are memory_mib, cpus, tasks)", cf.Line(k.Line), rows.Printable(where+"."+k.Value))
		}
		if seen[k.Value] {
			return "", fmt.Errorf("%s: %s.%s given twice", cf.Line(k.Line), where, k.Value)
		}
		seen[k.Value] = true
		t, err := cf.scalar(where+"."+k.Value, v, Text)
		if err != nil {
			return "", err
		}
		if _, err := strconv.ParseFloat(t, 64); err != nil {
			return "", fmt.Errorf("%s: %s.%s: %q: want a number", cf.Line(v.Line), where, k.Value, rows.Printable(t))
		}
		kv = append(kv, k.Value+"="+t)
	}
	return strings.Join(kv, ","), nil
}

// PluginNames returns the names of the plugins section, sorted.
func (cf *File) PluginNames() []string {
	names := make([]string, 0, len(cf.Plugins))
	for n := range cf.Plugins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// IsNotExist reports whether err says the file is not there.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
