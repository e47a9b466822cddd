// Package update is the agent's self-update (docs/fleet.md "Updating the agent"): the
// signed bundle a release ships in, the install tree versions are staged and switched
// in, the state a rollback is decided from, and the guard that decides it, run by the
// service manager before each start with a binary other than the new one.
package update

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/yuzugo/yuzu/agent/trust"
	"github.com/yuzugo/yuzu/sdk/semver"
)

// A bundle is a gzip'd tar of three or more regular files: IndexName, a JSON
// document naming the release (format, version, system, architecture) and each file
// with its size and SHA-256; SignatureName, minisign signatures of the index's
// bytes by a publisher whose file says `agent: yes`; and the files the index names
// (the agent's binary). The signature covers the index, the index covers every
// file: nothing in a bundle is believed before the signature is checked.
const (
	BundleFormat  = "yuzu-agent-bundle 1"
	IndexName     = "bundle.json"
	SignatureName = "bundle.json.minisig"
	// MaxBundleBytes bounds a download and what a bundle unpacks to.
	MaxBundleBytes = 256 << 20
	// maxEntries bounds a bundle's files.
	maxEntries = 16
	// maxIndexBytes bounds the index and the signature.
	maxIndexBytes = 64 << 10
)

// FloorName is the agent's own entry in the version floors (trust.Floors): no plugin
// can have this name (a hyphen is not in the plugin-name rule).
const FloorName = "yuzu-agent"

// Index is a bundle's bundle.json: what the bundle holds, which the signature covers (a
// plugin's self-description is a host.Manifest, another thing).
type Index struct {
	Format  string `json:"format"`
	Version string `json:"version"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	Files   []File `json:"files"`
}

// File is one file of a bundle.
type File struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Exec marks a program: it is written mode 0755, else 0644.
	Exec bool `json:"exec,omitempty"`
}

// AgentFile is the agent binary's name in a bundle for goos.
func AgentFile(goos string) string {
	if goos == "windows" {
		return "yuzu-agent.exe"
	}
	return "yuzu-agent"
}

// Bundle is a bundle read from its file and checked: its index, signature and
// files. Files holds every file's bytes.
type Bundle struct {
	Index Index
	Raw   []byte // the index's bytes, as signed
	Sig   []byte
	Files map[string][]byte
}

// ErrNotBundle means the payload is not a bundle at all: a bare binary (another
// agent's, from a server that serves both), or something else.
var ErrNotBundle = errors.New("not a signed yuzu-agent bundle")

// ReadBundle reads a bundle from r, at most MaxBundleBytes unpacked. It checks the
// structure only: Verify checks the signature and the files.
func ReadBundle(r io.Reader) (*Bundle, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNotBundle, err)
	}
	tr := tar.NewReader(gz)
	b := &Bundle{Files: map[string][]byte{}}
	var total int64
	for n := 0; ; n++ {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w (%v)", ErrNotBundle, err)
		}
		if n >= maxEntries+2 {
			return nil, fmt.Errorf("the bundle has more than %d files", maxEntries+2)
		}
		if h.Typeflag != tar.TypeReg || !plainName(h.Name) {
			return nil, fmt.Errorf("the bundle holds %q, which is not a plain file name", h.Name)
		}
		if _, dup := b.Files[h.Name]; dup {
			return nil, fmt.Errorf("the bundle holds %s twice", h.Name)
		}
		limit := int64(MaxBundleBytes) - total
		if h.Name == IndexName || h.Name == SignatureName {
			limit = maxIndexBytes
		}
		if h.Size > limit {
			return nil, fmt.Errorf("%s in the bundle is too large (%d bytes)", h.Name, h.Size)
		}
		data, err := io.ReadAll(io.LimitReader(tr, h.Size+1))
		if err != nil {
			return nil, fmt.Errorf("reading %s from the bundle: %w", h.Name, err)
		}
		if int64(len(data)) != h.Size {
			return nil, fmt.Errorf("%s in the bundle is cut short", h.Name)
		}
		total += h.Size
		switch h.Name {
		case IndexName:
			b.Raw = data
		case SignatureName:
			b.Sig = data
		default:
			b.Files[h.Name] = data
		}
	}
	if b.Raw == nil {
		return nil, fmt.Errorf("%w: no %s", ErrNotBundle, IndexName)
	}
	if err := json.Unmarshal(b.Raw, &b.Index); err != nil {
		return nil, fmt.Errorf("%s: %w", IndexName, err)
	}
	if b.Index.Format != BundleFormat {
		return nil, fmt.Errorf("%s: format %q, want %q", IndexName, b.Index.Format, BundleFormat)
	}
	return b, nil
}

// plainName is a file name without a directory, not hidden, in printable ASCII.
func plainName(name string) bool {
	if name == "" || len(name) > 100 || strings.HasPrefix(name, ".") || strings.ContainsAny(name, `/\:`) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if name[i] <= ' ' || name[i] > '~' {
			return false
		}
	}
	return true
}

// Verify checks that the bundle is a release this agent may run: signed by a
// publisher allowed to sign agent releases, for goos/goarch, of a semantic version,
// and every file the index names present with its size and SHA-256 (and nothing
// else), the agent binary among them.
func (b *Bundle) Verify(keys *trust.Keys, goos, goarch string) (trust.Signed, error) {
	if len(b.Sig) == 0 {
		return trust.Signed{}, fmt.Errorf("the bundle is not signed (no %s)", SignatureName)
	}
	if !keys.AgentReleases() {
		return trust.Signed{}, errors.New("no publisher may sign agent releases (`agent: yes`): the agent takes no release it cannot check")
	}
	signed, err := keys.VerifyAgent(b.Raw, b.Sig)
	if err != nil {
		return trust.Signed{}, fmt.Errorf("the bundle's signature: %w", err)
	}
	m := b.Index
	if !semver.Valid(m.Version) {
		return signed, fmt.Errorf("the bundle's version %q is not a semantic version", m.Version)
	}
	if m.OS != goos || m.Arch != goarch {
		return signed, fmt.Errorf("the bundle is for %s/%s, this agent runs on %s/%s", m.OS, m.Arch, goos, goarch)
	}
	names := map[string]bool{}
	for _, f := range m.Files {
		if !plainName(f.Name) || f.Name == IndexName || f.Name == SignatureName || names[f.Name] {
			return signed, fmt.Errorf("the manifest names %q, which a bundle cannot hold", f.Name)
		}
		names[f.Name] = true
		data, ok := b.Files[f.Name]
		if !ok {
			return signed, fmt.Errorf("the bundle lacks %s, which its manifest names", f.Name)
		}
		sum := sha256.Sum256(data)
		if int64(len(data)) != f.Size || hex.EncodeToString(sum[:]) != strings.ToLower(f.SHA256) {
			return signed, fmt.Errorf("%s in the bundle is not the file its manifest names (size or SHA-256)", f.Name)
		}
	}
	for name := range b.Files {
		if !names[name] {
			return signed, fmt.Errorf("the bundle holds %s, which its manifest does not name", name)
		}
	}
	if !names[AgentFile(goos)] {
		return signed, fmt.Errorf("the bundle has no %s", AgentFile(goos))
	}
	return signed, nil
}

// NewIndex describes files (name -> bytes; exec names the programs) as release
// version for goos/goarch, in name order.
func NewIndex(version, goos, goarch string, files map[string][]byte, exec ...string) Index {
	m := Index{Format: BundleFormat, Version: version, OS: goos, Arch: goarch}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		sum := sha256.Sum256(files[name])
		m.Files = append(m.Files, File{Name: name, Size: int64(len(files[name])), SHA256: hex.EncodeToString(sum[:]), Exec: slices.Contains(exec, name)})
	}
	return m
}

// MarshalIndex is the index's bytes as a bundle holds them (and a release signs).
func MarshalIndex(m Index) []byte {
	b, _ := json.MarshalIndent(m, "", "  ")
	return append(b, '\n')
}

// WriteBundle writes a bundle of the index's bytes raw, its signature sig, and
// files, deterministically (fixed times and owners, names in order).
func WriteBundle(w io.Writer, raw, sig []byte, files map[string][]byte) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	put := func(name string, data []byte, mode int64) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := put(IndexName, raw, 0o644); err != nil {
		return err
	}
	if sig != nil {
		if err := put(SignatureName, sig, 0o644); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := put(name, files[name], 0o755); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// ReadBundleFile reads a bundle from a file (no link followed).
func ReadBundleFile(path string) (*Bundle, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: errors.New("not a regular file")}
	}
	return ReadBundle(io.LimitReader(f, MaxBundleBytes+1))
}

// IndexOf reads only the index of a bundle in memory (the test server uses it to
// file a published build).
func IndexOf(bundle []byte) (Index, error) {
	b, err := ReadBundle(bytes.NewReader(bundle))
	if err != nil {
		return Index{}, err
	}
	return b.Index, nil
}
