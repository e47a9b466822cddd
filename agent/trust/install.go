package trust

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/safefile"
	"github.com/yuzugo/yuzu/sdk/semver"
)

// Candidate is a build offered for installation, by `plugins add` or the fleet server.
type Candidate struct {
	Name string
	// SHA256 is the hex checksum of the bytes, and File where they are in the plugin
	// dir (WriteBuild put them there).
	SHA256 string
	File   string
	// Version and Protocol are what the build said of itself at its trial start (or,
	// from the fleet, what the server claims: the start then checks it).
	Version  string
	Protocol int
	// OS and Arch are the system it was built for (Target).
	OS, Arch string
	// Signed is who vouched for it (Keys.Verify), with the signature text; zero for
	// an unsigned build.
	Signed    Signed
	Signature string
	// Source says how it came ("plugins add PATH", "fleet command ID").
	Source string
}

// Options loosen the rules for one installation, on the operator's word.
type Options struct {
	// Force installs the same version as other bytes, a build rolled back before, a
	// build whose version cannot be ordered, or one of another publisher.
	Force bool
	// AllowDowngrade installs a version below the current one or the floor, and
	// lowers the floor to it.
	AllowDowngrade bool
}

// The kinds of change an installation makes.
const (
	KindNew       = "new"       // the plugin was not installed
	KindUpgrade   = "upgrade"   // a higher version
	KindDowngrade = "downgrade" // a lower version, allowed
	KindRebuild   = "rebuild"   // the same version as other bytes, forced
	KindSame      = "same"      // this very build is installed already: nothing to do
)

// Change is what installing a candidate does: its kind, the build it replaces (nil
// for a new plugin) and the entry that becomes current.
type Change struct {
	Kind  string
	From  *Entry
	Entry *Entry
}

// Describe writes the change for people: "procs 1.0.0 -> 2.0.0 (sha256 ...)".
func (ch Change) Describe() string {
	switch ch.Kind {
	case KindNew:
		return ch.Entry.name + " " + ch.Entry.Label() + " (new)"
	case KindSame:
		return ch.Entry.name + " " + ch.Entry.Label() + " is installed already"
	}
	return ch.Entry.name + " " + ch.From.VersionOrUnknown() + " -> " + ch.Entry.Label() + " (" + ch.Kind + ")"
}

// RefusedError says why a build may not be installed.
type RefusedError struct {
	Name, Build, Reason string
}

func (e *RefusedError) Error() string {
	return "plugin " + e.Name + " " + e.Build + " refused: " + e.Reason
}

// Plan decides what installing c into cat would do, or why it may not be installed:
// a build for another system; an unsigned build where publisher keys are configured;
// a build that was rolled back before, the same version as other bytes, a version
// that cannot be ordered against the current one, or another publisher's build of a
// plugin, each unless forced; a version below the current one or the plugin's floor
// unless the downgrade is allowed. It changes nothing.
func Plan(cat *Catalog, keys *Keys, floors *Floors, c Candidate, o Options) (Change, error) {
	e := &Entry{
		File: c.File, SHA256: c.SHA256, Version: c.Version, OS: c.OS, Arch: c.Arch, Protocol: c.Protocol,
		Publisher: c.Signed.Publisher, SignedBy: c.Signed.KeyIDs, Signature: c.Signature,
		Added: time.Now().UTC().Truncate(time.Second), Source: c.Source, name: c.Name,
	}
	refuse := func(format string, args ...any) (Change, error) {
		return Change{}, &RefusedError{Name: c.Name, Build: e.Label(), Reason: fmt.Sprintf(format, args...)}
	}
	if !RunsHere(c.OS, c.Arch, runtime.GOOS, runtime.GOARCH) {
		return refuse("built for %s/%s, this is %s/%s", c.OS, c.Arch, runtime.GOOS, runtime.GOARCH)
	}
	if keys.Configured() && c.Signed.Publisher == "" {
		return refuse("unsigned, and this agent trusts only signed plugins (publisher keys are configured in %s)", keys.Dir)
	}
	cur := cat.Entry(c.Name)
	if cur == nil {
		if f := floors.Floor(c.Name); f != "" && !o.AllowDowngrade {
			if cmp, ok := semver.Compare(c.Version, f); !ok || cmp < 0 {
				return refuse("below its version floor %s (the highest version installed here before); pass --allow-downgrade to install it", f)
			}
		}
		return Change{Kind: KindNew, Entry: e}, nil
	}
	if cur.SHA256 == c.SHA256 {
		return Change{Kind: KindSame, From: cur, Entry: cur}, nil
	}
	if r, ok := cur.RejectedAs(c.SHA256); ok && !o.Force {
		return refuse("this build was rolled back on %s (%s); add a different build, or --force to try it again", r.At.Format(time.RFC3339), r.Reason)
	}
	if cur.Publisher != "" && c.Signed.Publisher != "" && cur.Publisher != c.Signed.Publisher && !o.Force {
		return refuse("plugin %s is published by %s, this build is signed by %s; --force to change publishers", c.Name, cur.Publisher, c.Signed.Publisher)
	}
	kind := KindUpgrade
	if cur.Version != "" {
		cmp, ok := semver.Compare(c.Version, cur.Version)
		switch {
		case !ok && !o.Force:
			return refuse("its version cannot be ordered against the installed %s (both must be semantic versions); --force to install it anyway", cur.VersionOrUnknown())
		case ok && cmp == 0 && !o.Force:
			return refuse("version %s is installed already as other bytes (sha256 %s); a new build needs a new version, or --force", cur.Version, short(cur.SHA256))
		case ok && cmp == 0:
			kind = KindRebuild
		case ok && cmp < 0 && !o.AllowDowngrade:
			return refuse("a downgrade from %s; pass --allow-downgrade to install it", cur.Version)
		case ok && cmp < 0:
			kind = KindDowngrade
		}
	}
	if f := floors.Floor(c.Name); f != "" && kind != KindDowngrade && !o.AllowDowngrade {
		if cmp, ok := semver.Compare(c.Version, f); ok && cmp < 0 {
			return refuse("below its version floor %s (the highest version installed here before); pass --allow-downgrade to install it", f)
		}
	}
	return Change{Kind: kind, From: cur, Entry: e}, nil
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

// Apply makes a planned change current in the catalog of dir, under its lock: the
// build becomes the plugin's entry (the one it replaces kept as Previous), the catalog
// is saved, the floor raised (or, for an allowed downgrade, set) and the store pruned
// of builds no entry names. The plan is made again under the lock, so a change that
// raced another is refused rather than applied on stale ground.
func Apply(ctx context.Context, dir string, keys *Keys, floors *Floors, c Candidate, o Options) (Change, error) {
	var ch Change
	cat, err := Update(ctx, dir, func(cat *Catalog) error {
		var err error
		if ch, err = Plan(cat, keys, floors, c, o); err != nil {
			return err
		}
		if ch.Kind == KindSame {
			return errUnchanged
		}
		cat.Put(c.Name, ch.Entry)
		return nil
	})
	if errors.Is(err, errUnchanged) {
		return ch, nil
	}
	if err != nil {
		return ch, err
	}
	if ch.Kind == KindDowngrade || o.AllowDowngrade {
		floors.Set(c.Name, c.Version)
	} else {
		floors.Raise(c.Name, c.Version)
	}
	if err := floors.Save(); err != nil {
		return ch, fmt.Errorf("the catalog is updated, but the version floor was not saved: %w", err)
	}
	_ = cat.Prune(dir, c.Name)
	return ch, nil
}

// errUnchanged ends an Update without saving.
var errUnchanged = errors.New("unchanged")

// RollBack makes the plugin's previous build current again in the catalog of dir,
// remembering the build it replaces as rejected (it is not installed again unless
// forced), and sets the floor to the version rolled back to. expect, when not empty,
// is the checksum of the build to roll back from: a catalog whose current build is
// another one (a newer add raced the rollback) is left alone. It returns the build
// now current and the one rolled back from.
func RollBack(ctx context.Context, dir string, floors *Floors, name, expect, reason string) (back, from *Entry, err error) {
	_, err = Update(ctx, dir, func(cat *Catalog) error {
		from = cat.Entry(name)
		if from != nil && expect != "" && from.SHA256 != expect {
			return fmt.Errorf("plugin %s: the catalog's current build is %s now, not the one to roll back from", name, from.Label())
		}
		var err error
		back, err = cat.Rollback(name, reason, time.Now())
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if floors != nil {
		floors.Set(name, back.Version)
		if err := floors.Save(); err != nil {
			return back, from, fmt.Errorf("rolled back, but the version floor was not saved: %w", err)
		}
	}
	return back, from, nil
}

// MaxBinaryBytes bounds a plugin binary the agent will install, hash and run.
const MaxBinaryBytes = 1 << 30

// WriteBuild puts a build's bytes into the store of dir (StorePath), mode 0755,
// atomically, unless the store holds exactly these bytes there already, and returns
// the slash-separated path inside dir and the hex SHA-256. The build's directory is
// made 0755 and never written again once it holds its binary.
func WriteBuild(dir, name string, bin []byte, goos string) (file, sum string, err error) {
	h := sha256.Sum256(bin)
	sum = hex.EncodeToString(h[:])
	file = StorePath(name, sum, goos)
	dest := filepath.Join(dir, filepath.FromSlash(file))
	if have, err := fileSum(dest); err == nil && have == sum {
		return file, sum, nil
	}
	if err := atomicfile.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return "", "", err
	}
	if err := atomicfile.WriteMode(dest, bin, 0o755); err != nil {
		return "", "", err
	}
	return file, sum, nil
}

// fileSum hashes a regular file, not following a link.
func fileSum(path string) (string, error) {
	f, fi, err := safefile.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi.Size() > MaxBinaryBytes {
		return "", fmt.Errorf("%s is over %d bytes", path, MaxBinaryBytes)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ReadSource reads a binary offered by path for installation, refusing what someone
// other than root (or the agent's user) could change while it is read: the file must
// be a regular file (opened without following a link), owned by root or the agent's
// user and writable by nobody else, in a directory no one else can write (a sticky
// one such as /tmp is fine), at most MaxBinaryBytes. The bytes returned are the ones
// read once from that descriptor: everything after (hash, signature, trial start)
// works on them or on their copy in the store, never on the path again.
func ReadSource(path string) ([]byte, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if err := trustedParent(filepath.Dir(abs)); err != nil {
		return nil, err
	}
	f, fi, err := safefile.Open(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := safefile.TrustedFile(f, fi, false); err != nil {
		return nil, fmt.Errorf("%s is %w; copy it somewhere only root can write first", path, err)
	}
	return safefile.ReadAll(f, fi, MaxBinaryBytes)
}

// trustedParent refuses a source directory that others could write without the
// sticky bit: they could rename another file over the binary between its checks.
func trustedParent(dir string) error {
	err := safefile.TrustedDir(dir)
	if err == nil {
		return nil
	}
	// A sticky, world-writable directory (/tmp) itself is fine: nobody else can
	// rename or remove what root owns there. TrustedDir allows that only for
	// parents, so look at the directory itself once more.
	fi, serr := os.Stat(dir)
	if serr == nil && fi.Mode()&fs.ModeSticky != 0 && safefile.Owned(fi) == nil {
		if perr := safefile.TrustedDir(filepath.Dir(dir)); perr == nil || filepath.Dir(dir) == dir {
			return nil
		}
	}
	return fmt.Errorf("the file's directory: %v", strings.TrimPrefix(err.Error(), dir+" "))
}
