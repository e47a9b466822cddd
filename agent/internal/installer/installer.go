// Package installer puts plugin builds into a plugin dir and takes them out: the one
// path of `yuzu-agent plugins add|remove|rollback` and of a plugin the fleet server
// delivers. An offered build is checked before any of its code runs (its system, its
// signature where publisher keys are configured), stored, started once to learn what
// it says of itself, checked again with that (version rules, definitions), and only
// then made current in the catalog, which a running agent follows (docs/agent.md
// "Plugin catalog and signatures").
package installer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/agent/trust"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
	"github.com/yuzugo/yuzu/sdk/semver"
)

// Config says where builds go and how they are tried.
type Config struct {
	PluginDir string
	// StateDir keeps the version floors (<data-dir>/trust).
	StateDir string
	Keys     *trust.Keys
	// Trial starts a build once, as a command would, and returns what it said of
	// itself (supervisor.Trial). The trial runs the stored copy, never the offered
	// path.
	Trial func(ctx context.Context, b supervisor.Binary) (host.Manifest, error)
	// Check lists what keeps a build with this manifest from the catalog (its
	// definitions disagree with its declarations, an id another plugin serves); nil
	// or an empty list: nothing.
	Check func(ctx context.Context, m host.Manifest) []string
}

// Offer is a build offered for installation.
type Offer struct {
	// Bytes are the binary, read once (trust.ReadSource, or the fleet's download).
	Bytes []byte
	// Signature is its minisign signature text; nil for an unsigned build.
	Signature []byte
	// FileName is the name it was offered under, yuzu-plugin-NAME[.exe]: it names
	// the plugin.
	FileName string
	// Source says where it came from, for the catalog ("plugins add PATH").
	Source string
	// Claim is what the offerer says the build is (the fleet server): the bytes and
	// the trial start must agree. Zero: no claim.
	Claim   Claim
	Options trust.Options
	// IfNewer skips a build whose version is not higher than the installed one
	// (a package installing its shipped plugins must not undo a fleet upgrade).
	IfNewer bool
}

// Claim is what a fleet server says of a build it delivers.
type Claim struct {
	Name, Version, SHA256 string
}

// Result is what Install did.
type Result struct {
	Change   trust.Change
	Manifest host.Manifest
	// Skipped says why nothing was installed (IfNewer), empty otherwise.
	Skipped string
}

// Problems is a refusal for several reasons, each on its own line.
type Problems struct {
	What     string
	Problems []string
}

func (p *Problems) Error() string {
	return p.What + ":\n  " + strings.Join(p.Problems, "\n  ")
}

// Install checks an offered build and makes it the plugin's current build.
func Install(ctx context.Context, cfg Config, o Offer) (Result, error) {
	name, ok := supervisor.PluginName(o.FileName)
	if !ok || !sdk.ValidName(name) {
		return Result{}, fmt.Errorf("%s: a plugin binary's name is %sNAME, NAME 1-64 letters, digits or underscores", o.FileName, trust.BinaryPrefix)
	}
	sum := sha256.Sum256(o.Bytes)
	hexSum := hex.EncodeToString(sum[:])
	c := trust.Candidate{Name: name, SHA256: hexSum, Source: o.Source}
	if o.Claim.Name != "" && o.Claim.Name != name {
		return Result{}, fmt.Errorf("the offer says plugin %s, the file is %s", o.Claim.Name, o.FileName)
	}
	if o.Claim.SHA256 != "" && !strings.EqualFold(o.Claim.SHA256, hexSum) {
		return Result{}, fmt.Errorf("plugin %s: the bytes' SHA-256 is %s, the offer says %s", name, hexSum, o.Claim.SHA256)
	}
	var err error
	if c.OS, c.Arch, err = trust.Target(o.Bytes); err != nil {
		return Result{}, fmt.Errorf("plugin %s: %w", name, err)
	}
	// Nothing of the build runs before this: a build for another system, or one
	// whose signature does not hold, is refused on its bytes alone.
	if !trust.RunsHere(c.OS, c.Arch, runtime.GOOS, runtime.GOARCH) {
		return Result{}, &trust.RefusedError{Name: name, Build: "sha256 " + hexSum[:12], Reason: fmt.Sprintf("built for %s/%s, this is %s/%s", c.OS, c.Arch, runtime.GOOS, runtime.GOARCH)}
	}
	switch {
	case len(o.Signature) > 0 && cfg.Keys.Configured():
		signed, err := cfg.Keys.Verify(name, o.Bytes, o.Signature)
		if err != nil {
			return Result{}, &trust.RefusedError{Name: name, Build: "sha256 " + hexSum[:12], Reason: "its signature is not trusted: " + err.Error()}
		}
		c.Signed, c.Signature = signed, strings.TrimSpace(string(o.Signature))+"\n"
	case cfg.Keys.Configured():
		return Result{}, &trust.RefusedError{Name: name, Build: "sha256 " + hexSum[:12],
			Reason: "unsigned, and this agent trusts only signed plugins (publisher keys are configured in " + cfg.Keys.Dir + "); give its minisign signature as FILE.minisig or with --signature"}
	}
	// What the catalog already says of these bytes needs no start of them: the build
	// installed already, or one rolled back before.
	if cat, err := trust.Load(cfg.PluginDir); err == nil {
		if cur := cat.Entry(name); cur != nil && cur.SHA256 == hexSum {
			return Result{Change: trust.Change{Kind: trust.KindSame, From: cur, Entry: cur}}, nil
		} else if r, ok := cur.RejectedAs(hexSum); ok && !o.Options.Force {
			return Result{}, &trust.RefusedError{Name: name, Build: r.Version + " (sha256 " + hexSum[:12] + ")",
				Reason: fmt.Sprintf("this build was rolled back on %s (%s); add a different build, or --force to try it again", r.At.Format(time.RFC3339), r.Reason)}
		}
	}
	floors, err := trust.LoadFloors(cfg.StateDir)
	if err != nil {
		return Result{}, err
	}
	if c.File, _, err = trust.WriteBuild(cfg.PluginDir, name, o.Bytes, c.OS); err != nil {
		return Result{}, fmt.Errorf("plugin %s: storing the build: %w", name, err)
	}
	res, err := tryAndApply(ctx, cfg, o, c, floors)
	if err != nil || res.Skipped != "" {
		// The stored copy of a build that did not go in leaves the store again.
		_ = trust.PruneStore(ctx, cfg.PluginDir, name)
	}
	return res, err
}

// tryAndApply starts the stored build once and, when it says what it should, makes
// it current.
func tryAndApply(ctx context.Context, cfg Config, o Offer, c trust.Candidate, floors *trust.Floors) (Result, error) {
	bin := supervisor.Binary{Name: c.Name, Path: filepath.Join(cfg.PluginDir, filepath.FromSlash(c.File)), Checksum: mustHex(c.SHA256),
		Version: o.Claim.Version, Build: "sha256 " + c.SHA256[:12]}
	m, err := cfg.Trial(ctx, bin)
	if err != nil {
		return Result{}, fmt.Errorf("%s does not work as a yuzu plugin: %w", o.FileName, err)
	}
	c.Version, c.Protocol = m.Version, m.Protocol
	if o.IfNewer {
		if why := notNewer(cfg.PluginDir, c); why != "" {
			return Result{Manifest: m, Skipped: why}, nil
		}
	}
	if cfg.Check != nil {
		if problems := cfg.Check(ctx, m); len(problems) > 0 {
			return Result{Manifest: m}, &Problems{What: fmt.Sprintf("%s %s cannot be installed", m.Name, m.Version), Problems: problems}
		}
	}
	ch, err := trust.Apply(ctx, cfg.PluginDir, cfg.Keys, floors, c, o.Options)
	return Result{Change: ch, Manifest: m}, err
}

// notNewer says why a build is not newer than the installed one, "" when it is (or
// nothing is installed).
func notNewer(dir string, c trust.Candidate) string {
	cat, err := trust.Load(dir)
	if err != nil {
		return ""
	}
	cur := cat.Entry(c.Name)
	if cur == nil || cur.Version == "" {
		return ""
	}
	if cur.SHA256 == c.SHA256 {
		return fmt.Sprintf("%s %s is installed already", c.Name, cur.Label())
	}
	if cmp, ok := semver.Compare(c.Version, cur.Version); ok && cmp <= 0 {
		return fmt.Sprintf("%s %s is installed, not older than %s", c.Name, cur.Label(), c.Version)
	}
	return ""
}

func mustHex(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}

// Remove takes a plugin out of the catalog and its builds out of the plugin dir (a
// top-level binary the entry named included). It returns the build removed.
func Remove(ctx context.Context, dir, name string) (*trust.Entry, error) {
	var gone *trust.Entry
	_, err := trust.Update(ctx, dir, func(cat *trust.Catalog) error {
		if gone = cat.Entry(name); gone == nil {
			return fmt.Errorf("no plugin %s is in %s", name, trust.Path(dir))
		}
		cat.Remove(name)
		return nil
	})
	if err != nil {
		return nil, err
	}
	var errs []error
	if !strings.Contains(gone.File, "/") {
		if err := removeFile(filepath.Join(dir, gone.File)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := trust.PruneStore(ctx, dir, name); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return gone, fmt.Errorf("plugin %s is no longer trusted, but its files could not all be removed: %w", name, err)
	}
	return gone, nil
}

// Rollback makes a plugin's previous build current again on the operator's word; the
// build it replaces is remembered as rolled back.
func Rollback(ctx context.Context, cfg Config, name string) (back, from *trust.Entry, err error) {
	floors, err := trust.LoadFloors(cfg.StateDir)
	if err != nil {
		return nil, nil, err
	}
	return trust.RollBack(ctx, cfg.PluginDir, floors, name, "", "rolled back by the operator (yuzu-agent plugins rollback)")
}

func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Pin records builds that are in the plugin dir already, at its top
// (yuzu-plugin-NAME), by their checksum and system alone, without starting them: what
// a build system or a package does when it lays out a plugin dir it cannot run (a
// cross build). Their versions are learnt at their first start. A signature beside a
// file (FILE.minisig) is checked as for Install; where publisher keys are configured,
// an unsigned file is refused. An entry pinned over a file rewritten in place keeps no
// previous build: those bytes are gone.
func Pin(ctx context.Context, cfg Config, files []string) ([]*trust.Entry, error) {
	var pinned []*trust.Entry
	var entries []*trust.Entry
	names := map[string]string{} // file -> plugin name
	for _, f := range files {
		if filepath.Dir(filepath.Clean(f)) != filepath.Clean(cfg.PluginDir) {
			return nil, fmt.Errorf("%s is not at the top of the plugin dir %s: pin records files in place (use plugins add to copy one in)", f, cfg.PluginDir)
		}
		data, err := trust.ReadSource(f)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		e := &trust.Entry{File: filepath.Base(f), SHA256: hex.EncodeToString(sum[:]), Source: "plugins pin"}
		if e.OS, e.Arch, err = trust.Target(data); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		// The name as the build's own system spells its file: a cross build for
		// Windows is pinned by the build machine's agent, and ends in .exe.
		name, ok := strings.CutPrefix(e.File, trust.BinaryPrefix)
		if e.OS == "windows" {
			name = strings.TrimSuffix(name, ".exe")
		}
		if !ok || !sdk.ValidName(name) {
			return nil, fmt.Errorf("%s: a plugin binary's name is %sNAME", f, trust.BinaryPrefix)
		}
		names[e.File] = name
		sig, err := os.ReadFile(f + ".minisig")
		switch {
		case err == nil && cfg.Keys.Configured():
			signed, verr := cfg.Keys.Verify(name, data, sig)
			if verr != nil {
				return nil, fmt.Errorf("%s: its signature is not trusted: %w", f, verr)
			}
			e.Publisher, e.SignedBy, e.Signature = signed.Publisher, signed.KeyIDs, strings.TrimSpace(string(sig))+"\n"
		case cfg.Keys.Configured():
			return nil, fmt.Errorf("%s: unsigned, and this agent trusts only signed plugins (publisher keys are configured in %s)", f, cfg.Keys.Dir)
		}
		entries = append(entries, e)
	}
	_, err := trust.Update(ctx, cfg.PluginDir, func(cat *trust.Catalog) error {
		for _, e := range entries {
			cat.Put(names[e.File], e)
			if e.Previous != nil && e.Previous.File == e.File {
				e.Previous = nil
			}
			pinned = append(pinned, e)
		}
		return nil
	})
	return pinned, err
}
