// Package trust decides which plugin binaries may run as root: the plugin catalog of a
// plugin directory (what is installed, at which version, with which checksum, for
// which system, signed by whom, and the version it replaced), the publishers' key
// sets that signatures are checked against, and the version floors that refuse a
// downgrade. `plugins add`, the supervisor's start check and a plugin delivered by the
// fleet server all ask it the same questions. docs/agent.md, "Plugin catalog and
// signatures", gives the rules and their reasons.
package trust

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/filelock"
)

// FileName is the catalog's name inside the plugin directory.
const FileName = "catalog.json"

// Format is the catalog format this agent reads and writes. A catalog of a later
// format is refused rather than half understood.
const Format = 1

// MaxCatalogBytes bounds the catalog: an entry is well under 2 KiB, so 4 MiB holds
// thousands of plugins; anything larger is not a catalog the agent wrote.
const MaxCatalogBytes = 4 << 20

// BinaryPrefix starts the file name of every plugin binary.
const BinaryPrefix = "yuzu-plugin-"

// StoreDir is the directory of the plugin dir where `plugins add` keeps every binary
// it installs, one directory per build: store/NAME/<first 16 hex digits of the
// SHA-256>/yuzu-plugin-NAME. A build's directory is never written again once made, so
// the version an upgrade replaced is still there, byte for byte, to roll back to.
const StoreDir = "store"

// maxRejected bounds the builds an entry remembers as rolled back.
const maxRejected = 8

// Catalog is the plugin catalog of one plugin directory.
type Catalog struct {
	Format  int               `json:"format"`
	Plugins map[string]*Entry `json:"plugins"`

	// Migrated says the catalog was made from a plugins.sha256 just now; Load has
	// written it and moved the old file aside unless MigrationErr says why not.
	Migrated     int   `json:"-"`
	MigrationErr error `json:"-"`
}

// Entry is one installed plugin: the build that runs, and the one it replaced.
type Entry struct {
	// File is the binary's path inside the plugin dir, slash-separated: either
	// yuzu-plugin-NAME[.exe] at the top, or a build in the store.
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	// Version is what the plugin said of itself when it was added; empty for an
	// entry migrated from plugins.sha256 or written by hand, which is then whatever
	// the binary says.
	Version string `json:"version,omitempty"`
	// OS and Arch are the system the binary was built for (Go's names), when known.
	OS   string `json:"os,omitempty"`
	Arch string `json:"arch,omitempty"`
	// Protocol is the plugin protocol version the plugin spoke when it was added.
	Protocol int `json:"protocol,omitempty"`
	// Publisher and SignedBy say who signed it (publisher name, key ids), Signature
	// is the signature text; all empty for an unsigned plugin.
	Publisher string   `json:"publisher,omitempty"`
	SignedBy  []string `json:"signed_by,omitempty"`
	Signature string   `json:"signature,omitempty"`
	// Added and Source say when and how the build came in ("plugins add PATH",
	// "fleet command ID", "rollback", "plugins.sha256").
	Added  time.Time `json:"added,omitzero"`
	Source string    `json:"source,omitempty"`
	// Previous is the build this one replaced, kept to roll back to; nil for the
	// first build of a plugin, and always nil inside a Previous.
	Previous *Entry `json:"previous,omitempty"`
	// Rejected are builds rolled back or refused after they were tried, newest last:
	// they are not installed again unless forced.
	Rejected []Rejection `json:"rejected,omitempty"`

	name string // the entry's key in Catalog.Plugins
}

// Rejection is one build that was rolled back.
type Rejection struct {
	Version string    `json:"version"`
	SHA256  string    `json:"sha256"`
	Reason  string    `json:"reason"`
	At      time.Time `json:"at"`
}

// Name is the plugin's name.
func (e *Entry) Name() string { return e.name }

// Checksum returns the SHA-256 as bytes.
func (e *Entry) Checksum() []byte {
	b, _ := hex.DecodeString(e.SHA256)
	return b
}

// Label names the build for people: "2.0.0 (sha256 72e79a1b2c3d)", or "sha256 72e79a1b2c3d"
// when its version is not known.
func (e *Entry) Label() string {
	short := e.SHA256
	if len(short) > 12 {
		short = short[:12]
	}
	if e.Version == "" {
		return "sha256 " + short
	}
	return e.Version + " (sha256 " + short + ")"
}

// VersionOrUnknown is the version, or "unknown" for an entry without one.
func (e *Entry) VersionOrUnknown() string {
	if e.Version == "" {
		return "unknown"
	}
	return e.Version
}

// RejectedAs returns the rejection of the build with checksum sum, if it was rolled
// back before.
func (e *Entry) RejectedAs(sum string) (Rejection, bool) {
	if e == nil {
		return Rejection{}, false
	}
	for i := len(e.Rejected) - 1; i >= 0; i-- {
		if e.Rejected[i].SHA256 == sum {
			return e.Rejected[i], true
		}
	}
	return Rejection{}, false
}

// reject remembers a rolled-back build, keeping the newest few.
func (e *Entry) reject(r Rejection) {
	e.Rejected = append(e.Rejected, r)
	if n := len(e.Rejected); n > maxRejected {
		e.Rejected = slices.Clone(e.Rejected[n-maxRejected:])
	}
}

// Path is where the catalog of dir is.
func Path(dir string) string { return filepath.Join(dir, FileName) }

// ErrNoCatalog is wrapped when the plugin dir has neither a catalog nor a
// plugins.sha256 to make one from.
var ErrNoCatalog = errors.New("no " + FileName + " in the plugin dir")

// Load reads the catalog of dir. A plugin dir that has no catalog but a
// plugins.sha256 (the manifest of agents before the catalog) is migrated: the
// catalog is made from it (each binary pinned by its checksum alone, its version
// learnt when it runs), written, and the old file renamed plugins.sha256.migrated;
// Migrated says how many plugins it had. The catalog decides what runs as root, so
// it is read like the manifest was: a regular file, not a link or a FIFO, at most
// MaxCatalogBytes, owned by root or the agent's user and writable by nobody else.
func Load(dir string) (*Catalog, error) {
	data, err := readTrusted(Path(dir), MaxCatalogBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return migrate(dir)
	}
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Parse reads catalog text and checks every entry.
func Parse(data []byte) (*Catalog, error) {
	var c Catalog
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", FileName, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: more than one JSON value", FileName)
	}
	if c.Format != Format {
		return nil, fmt.Errorf("%s: format %d, this agent reads format %d", FileName, c.Format, Format)
	}
	if c.Plugins == nil {
		c.Plugins = map[string]*Entry{}
	}
	for name, e := range c.Plugins {
		if e == nil {
			return nil, fmt.Errorf("%s: plugin %q has no entry", FileName, name)
		}
		if err := e.check(name, true); err != nil {
			return nil, fmt.Errorf("%s: plugin %q: %w", FileName, name, err)
		}
		e.name = name
		if e.Previous != nil {
			if err := e.Previous.check(name, false); err != nil {
				return nil, fmt.Errorf("%s: plugin %q: previous: %w", FileName, name, err)
			}
			e.Previous.name = name
		}
	}
	return &c, nil
}

// fileShape says whether f is what an entry's file may be: the top-level binary or a
// build in the store, that is ^(store/NAME/[0-9a-f]{16}/)?yuzu-plugin-NAME(\.exe)?$
// with NAME 1-64 letters, digits or underscores. Anything else (an absolute path,
// "..", another plugin's name) is refused. A loop, not a regular expression: compiled
// at package initialisation it cost every agent process 0.3 ms before main (the same
// reason as sdk.ValidName), and trust is imported by every command.
func fileShape(f string) bool {
	if rest, ok := strings.CutPrefix(f, StoreDir+"/"); ok {
		name, rest, ok := strings.Cut(rest, "/")
		if !ok || !sdk.ValidName(name) {
			return false
		}
		build, rest, ok := strings.Cut(rest, "/")
		if !ok || len(build) != 16 || strings.Trim(build, "0123456789abcdef") != "" {
			return false
		}
		f = rest
	}
	name, ok := strings.CutPrefix(f, BinaryPrefix)
	// A name holds no dot: at most one ".exe" can end the file.
	return ok && sdk.ValidName(strings.TrimSuffix(name, ".exe"))
}

func (e *Entry) check(name string, top bool) error {
	if !sdk.ValidName(name) {
		return errors.New("a plugin's name is 1-64 letters, digits or underscores")
	}
	base := path.Base(e.File)
	if !fileShape(e.File) || (base != BinaryPrefix+name && base != BinaryPrefix+name+".exe") ||
		(strings.HasPrefix(e.File, StoreDir+"/") && strings.Split(e.File, "/")[1] != name) {
		return fmt.Errorf("file %q is not %s%s or a build of it in %s/%s/", e.File, BinaryPrefix, name, StoreDir, name)
	}
	if b, err := hex.DecodeString(e.SHA256); err != nil || len(b) != 32 {
		return errors.New("sha256 is not 64 hex digits")
	}
	if e.Protocol < 0 {
		return errors.New("protocol is negative")
	}
	if (e.Publisher == "") != (len(e.SignedBy) == 0) || (e.Publisher == "") != (e.Signature == "") {
		return errors.New("publisher, signed_by and signature go together")
	}
	if !top && (e.Previous != nil || len(e.Rejected) > 0) {
		return errors.New("a previous build has no previous or rejected builds of its own")
	}
	return nil
}

// Marshal renders the catalog, entries sorted by name (encoding/json sorts map keys).
func (c *Catalog) Marshal() []byte {
	c.Format = Format
	data, _ := json.MarshalIndent(c, "", "  ")
	return append(data, '\n')
}

// Mode is the catalog's permission bits: readable by all (it is no secret), writable
// only by its owner.
const Mode = 0o644

// Save replaces the catalog of dir atomically (mode 0644 from its creation, fsynced,
// renamed into place), the one write that makes a change take effect.
func (c *Catalog) Save(dir string) error {
	return atomicfile.WriteMode(Path(dir), c.Marshal(), Mode)
}

// Entry returns the entry of a plugin, nil when it has none.
func (c *Catalog) Entry(name string) *Entry {
	if e, ok := c.Plugins[name]; ok {
		return e
	}
	return nil
}

// Put installs e as the plugin's current build, keeping the build it replaces as
// Previous (unless it is the same build) and carrying the rejections over.
func (c *Catalog) Put(name string, e *Entry) {
	e.name = name
	old := c.Plugins[name]
	if old != nil {
		e.Rejected = old.Rejected
		if old.SHA256 != e.SHA256 {
			prev := *old
			prev.Previous, prev.Rejected = nil, nil
			e.Previous = &prev
		} else {
			e.Previous = old.Previous
		}
	}
	c.Plugins[name] = e
}

// Rollback makes the plugin's previous build current again and remembers the build
// it replaces as rejected, with the reason. It returns the build now current.
func (c *Catalog) Rollback(name, reason string, at time.Time) (*Entry, error) {
	cur := c.Plugins[name]
	if cur == nil {
		return nil, fmt.Errorf("no plugin %s in the catalog", name)
	}
	if cur.Previous == nil {
		return nil, fmt.Errorf("plugin %s %s has no previous build to roll back to", name, cur.VersionOrUnknown())
	}
	back := *cur.Previous
	back.name = name
	back.Rejected = cur.Rejected
	back.reject(Rejection{Version: cur.Version, SHA256: cur.SHA256, Reason: reason, At: at.UTC()})
	c.Plugins[name] = &back
	return &back, nil
}

// Remove drops a plugin from the catalog.
func (c *Catalog) Remove(name string) { delete(c.Plugins, name) }

// Lock holds the catalog of one plugin dir for a read-modify-write, across processes
// (`plugins add` beside a running agent that rolls a plugin back).
type Lock struct{ f *os.File }

// LockName is the lock file in the plugin dir.
const LockName = ".catalog.lock"

// Acquire takes the catalog lock of dir, waiting while another process holds it,
// until ctx ends.
func Acquire(ctx context.Context, dir string) (*Lock, error) {
	f, err := os.OpenFile(filepath.Join(dir, LockName), os.O_RDWR|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("catalog lock: %w", err)
	}
	if err := filelock.Wait(ctx, f); err != nil {
		f.Close()
		if errors.Is(err, filelock.ErrUnsupported) {
			return &Lock{}, nil // nothing else can be done here: proceed unlocked
		}
		return nil, fmt.Errorf("catalog lock: %w", err)
	}
	return &Lock{f: f}, nil
}

// Release drops the lock.
func (l *Lock) Release() {
	if l != nil && l.f != nil {
		l.f.Close()
	}
}

// Update loads the catalog of dir under its lock, lets change modify it and saves it
// when change returns nil. A missing catalog is an empty one here.
func Update(ctx context.Context, dir string, change func(*Catalog) error) (*Catalog, error) {
	l, err := Acquire(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer l.Release()
	c, err := Load(dir)
	if errors.Is(err, ErrNoCatalog) {
		c, err = &Catalog{Format: Format, Plugins: map[string]*Entry{}}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := change(c); err != nil {
		return c, err
	}
	return c, c.Save(dir)
}

// StorePath is where the build of a plugin with checksum sum lives in the store,
// slash-separated inside the plugin dir.
func StorePath(name, sum, goos string) string {
	file := BinaryPrefix + name
	if goos == "windows" {
		file += ".exe"
	}
	return StoreDir + "/" + name + "/" + sum[:16] + "/" + file
}

// Prune removes the builds of a plugin's store directory that the catalog no longer
// names (current or previous), and the plugin's store directory when it names none.
// It never touches a top-level binary. Errors are returned for the log, not acted on.
func (c *Catalog) Prune(dir, name string) error {
	keep := map[string]bool{}
	if e := c.Plugins[name]; e != nil {
		keep[path.Dir(e.File)] = true
		if e.Previous != nil {
			keep[path.Dir(e.Previous.File)] = true
		}
	}
	root := filepath.Join(dir, StoreDir, name)
	builds, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, b := range builds {
		if keep[StoreDir+"/"+name+"/"+b.Name()] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(root, b.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	if len(keep) == 0 {
		if err := os.Remove(root); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// PruneStore removes, under the catalog lock, the builds of a plugin that the catalog
// of dir no longer names: what an installation that did not go through leaves.
func PruneStore(ctx context.Context, dir, name string) error {
	l, err := Acquire(ctx, dir)
	if err != nil {
		return err
	}
	defer l.Release()
	c, err := Load(dir)
	if errors.Is(err, ErrNoCatalog) {
		c, err = &Catalog{Plugins: map[string]*Entry{}}, nil
	}
	if err != nil {
		return err
	}
	return c.Prune(dir, name)
}
