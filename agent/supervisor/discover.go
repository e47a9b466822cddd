package supervisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/yuzugo/yuzu/agent/trust"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/safefile"
)

// BinaryPrefix starts the file name of every plugin binary.
const BinaryPrefix = trust.BinaryPrefix

// offered is one plugin the plugin dir offers: the build its catalog entry names
// (Binary, all a start is given) and whether it may run at all, which discovery and
// a reload decide and hand to the plugin's keeper. It was named binary, beside Binary:
// not a second description of the build, but the build and a verdict on it.
type offered struct {
	Binary
	refused error // why it may not run, or nil
}

// hostOS is the system the agent runs on.
var hostOS = runtime.GOOS

// PluginName returns the plugin name a file name stands for, and whether the file
// name is a plugin binary's at all.
func PluginName(file string) (string, bool) {
	if !strings.HasPrefix(file, BinaryPrefix) {
		return "", false
	}
	name := strings.TrimPrefix(file, BinaryPrefix)
	if hostOS == "windows" {
		name = strings.TrimSuffix(name, ".exe")
	}
	return name, name != ""
}

// catalogView is what discovery read: the plugins, and what to say about the
// catalog itself once (a migration, keys that no longer verify).
type catalogView struct {
	bins  map[string]*offered
	notes []string
}

// discover reads the catalog of dir and decides for each plugin whether it may run:
// its entry (a build for this system, not signed only by revoked keys, signed at all
// where publisher keys are configured) and its file (a regular file owned by root or
// the agent's user that nobody else can change). A plugin binary at the top of dir
// that the catalog does not name is kept, refused, so that `plugins` and a command for
// it say why; other files are ignored. An error means the directory itself cannot be
// used. A catalog that cannot be read refuses every plugin, naming the problem.
func discover(dir string, keys *trust.Keys) (catalogView, error) {
	v := catalogView{bins: map[string]*offered{}}
	if err := checkDir(dir); err != nil {
		return v, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return v, fmt.Errorf("plugin dir %s: %w", dir, err)
	}
	cat, cerr := trust.Load(dir)
	if cat != nil && cat.Migrated > 0 || cat != nil && cat.MigrationErr != nil {
		note := fmt.Sprintf("the plugin catalog %s was made from %s (%d plugins, each pinned by its checksum; versions are learnt at their next start)",
			trust.Path(dir), trust.LegacyName, cat.Migrated)
		if cat.MigrationErr != nil {
			note += "; it could not be written, so this agent uses it from memory and migrates again at its next start: " + cat.MigrationErr.Error()
		} else {
			note += "; the old file is kept as " + trust.LegacyName + ".migrated"
		}
		v.notes = append(v.notes, note)
	}
	if cerr == nil {
		for name, e := range cat.Plugins {
			v.bins[name] = fromEntry(dir, name, e, keys)
		}
	}
	for _, de := range entries {
		name, ok := PluginName(de.Name())
		if !ok || strings.Contains(de.Name(), ".tmp.") {
			continue
		}
		if _, listed := v.bins[name]; listed {
			continue
		}
		path := filepath.Join(dir, de.Name())
		b := &offered{Binary: Binary{Name: name, Path: path}}
		switch {
		case !sdk.ValidName(name):
			b.refused = &RefusedError{Path: path, Reason: "plugin name must be 1-64 letters, digits or underscores"}
		case errors.Is(cerr, trust.ErrNoCatalog):
			b.refused = &RefusedError{Path: path, Reason: cerr.Error()}
		case cerr != nil:
			b.refused = &RefusedError{Path: path, Reason: "unusable catalog: " + cerr.Error()}
		default:
			b.refused = &RefusedError{Path: path, Reason: "not in " + trust.FileName + " (add it with `yuzu-agent plugins add`)"}
		}
		v.bins[name] = b
	}
	return v, nil
}

// fromEntry is one catalog entry as the supervisor runs it.
func fromEntry(dir, name string, e *trust.Entry, keys *trust.Keys) *offered {
	b := &offered{Binary: binaryOf(dir, name, e)}
	refuse := func(reason string) { b.refused = &RefusedError{Path: b.Path, Reason: reason} }
	switch {
	case !trust.RunsHere(e.OS, e.Arch, runtime.GOOS, runtime.GOARCH):
		refuse(fmt.Sprintf("built for %s/%s, this is %s/%s", e.OS, e.Arch, runtime.GOOS, runtime.GOARCH))
	case keys.Configured() && e.Publisher == "":
		refuse("unsigned, and this agent trusts only signed plugins (publisher keys are configured in " + keys.Dir + "); add a signed build with `yuzu-agent plugins add`")
	case keys.Configured():
		if why := keys.Revoked(e); why != "" {
			refuse("no longer trusted: " + why)
		}
	}
	if b.refused == nil {
		b.refused = checkFile(b.Path)
	}
	return b
}

// binaryOf describes the build a catalog entry names.
func binaryOf(dir, name string, e *trust.Entry) Binary {
	return Binary{
		Name: name, Path: filepath.Join(dir, filepath.FromSlash(e.File)), Checksum: e.Checksum(),
		Version: e.Version, Build: e.Label(), Trust: trustOf(e),
	}
}

// trustOf says who vouches for a build: "unsigned" or "signed by PUBLISHER (key ...)".
func trustOf(e *trust.Entry) string {
	if e.Publisher == "" {
		return "unsigned"
	}
	return "signed by " + e.Publisher + " (key " + strings.Join(e.SignedBy, ", ") + ")"
}

// checkFile refuses anything but a regular file (not a symbolic link) owned by root or
// the agent's user that nobody else can change. It is the early check that lets
// `plugins` show a refusal; the launcher checks again on the descriptor it runs. On
// Windows safefile.TrustedPath opens the file to read its owner and DACL.
func checkFile(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return &RefusedError{Path: path, Reason: err.Error()}
	}
	if !fi.Mode().IsRegular() {
		return &RefusedError{Path: path, Reason: "is " + safefile.Describe(fi.Mode()) + ", not a regular file"}
	}
	if err := safefile.TrustedPath(path, fi, false); err != nil {
		return &RefusedError{Path: path, Reason: err.Error()}
	}
	return nil
}

// checkDir refuses a plugin dir that someone other than root or the agent's user could
// change, itself or any parent (safefile.TrustedDir): whoever can write there can make
// the agent run anything as root.
func checkDir(dir string) error {
	if err := safefile.TrustedDir(dir); err != nil {
		return fmt.Errorf("plugin dir %w", err)
	}
	return nil
}

func sortedNames(m map[string]*offered) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Survey is what New would make of opts.PluginDir, without starting anything: each
// plugin it would keep, with why it would be refused (nil: it would run). An error
// means New would fail.
func Survey(opts Options) (map[string]error, error) {
	view, err := discover(opts.PluginDir, opts.Keys)
	if err != nil {
		return nil, err
	}
	out := make(map[string]error, len(view.bins))
	for name, b := range view.bins {
		out[name] = b.refused
		if b.refused == nil && opts.Disabled[name] {
			out[name] = &RefusedError{Path: b.Path, Reason: "disabled in the configuration file (plugins." + name + ".enabled: false)"}
		}
	}
	return out, nil
}
