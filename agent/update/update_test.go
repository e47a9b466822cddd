package update

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"aead.dev/minisign"

	"github.com/yuzugo/yuzu/agent/trust"
)

// release is a publisher's signing key and the keys an agent loads for it.
type release struct {
	priv minisign.PrivateKey
	keys *trust.Keys
}

func newRelease(t *testing.T, agentLine string) release {
	t.Helper()
	pub, priv, err := minisign.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	text, _ := pub.MarshalText()
	if err := os.WriteFile(filepath.Join(dir, "vendor.pub"), []byte(string(text)+"\n"+agentLine+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	keys, err := trust.LoadKeys(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	return release{priv: priv, keys: keys}
}

// bundle makes a signed bundle of version for goos/goarch holding the agent binary.
func (r release) bundle(t *testing.T, version, goos, goarch string, agent []byte) []byte {
	t.Helper()
	files := map[string][]byte{AgentFile(goos): agent}
	raw := MarshalIndex(NewIndex(version, goos, goarch, files, AgentFile(goos)))
	var buf bytes.Buffer
	if err := WriteBundle(&buf, raw, minisign.Sign(r.priv, raw), files); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestBundleVerify(t *testing.T) {
	rel := newRelease(t, "agent: yes")
	good := rel.bundle(t, "1.2.0", "linux", "amd64", []byte("#!/bin/sh\necho agent\n"))
	b, err := ReadBundle(bytes.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if signed, err := b.Verify(rel.keys, "linux", "amd64"); err != nil || signed.Publisher != "vendor" {
		t.Fatalf("a good bundle: %v %v", signed, err)
	}
	if _, err := b.Verify(rel.keys, "windows", "amd64"); err == nil || !strings.Contains(err.Error(), "is for linux/amd64") {
		t.Errorf("another system: %v", err)
	}
	// A file altered after signing.
	b.Files["yuzu-agent"] = []byte("#!/bin/sh\necho evil\n")
	if _, err := b.Verify(rel.keys, "linux", "amd64"); err == nil || !strings.Contains(err.Error(), "not the file its manifest names") {
		t.Errorf("an altered file: %v", err)
	}
	// The index altered after signing.
	b, _ = ReadBundle(bytes.NewReader(good))
	b.Raw = bytes.Replace(b.Raw, []byte("1.2.0"), []byte("9.2.0"), 1)
	if _, err := b.Verify(rel.keys, "linux", "amd64"); err == nil || !strings.Contains(err.Error(), "does not match these bytes") {
		t.Errorf("an altered manifest: %v", err)
	}
	// Signed by a key nobody configured, by a publisher without agent: yes.
	other := newRelease(t, "agent: yes")
	b, _ = ReadBundle(bytes.NewReader(other.bundle(t, "1.2.0", "linux", "amd64", []byte("x"))))
	if _, err := b.Verify(rel.keys, "linux", "amd64"); err == nil || !strings.Contains(err.Error(), "which no configured publisher has") {
		t.Errorf("an unknown key: %v", err)
	}
	// A plugin publisher's key, beside a release publisher: it may not vouch for a
	// release.
	pluginsOnly := newRelease(t, "plugins: *")
	for name, p := range pluginsOnly.keys.Publishers {
		rel.keys.Publishers["plugins-"+name] = p
	}
	b, _ = ReadBundle(bytes.NewReader(pluginsOnly.bundle(t, "1.2.0", "linux", "amd64", []byte("x"))))
	if _, err := b.Verify(rel.keys, "linux", "amd64"); err == nil || !strings.Contains(err.Error(), "may not sign agent releases") {
		t.Errorf("a plugin publisher: %v", err)
	}
	// No keys at all: nothing is taken.
	empty, _ := trust.LoadKeys("", "")
	b, _ = ReadBundle(bytes.NewReader(good))
	if _, err := b.Verify(empty, "linux", "amd64"); err == nil || !strings.Contains(err.Error(), "no publisher may sign agent releases") {
		t.Errorf("no keys: %v", err)
	}
	// A bare binary, and garbage, are no bundle.
	for name, data := range map[string][]byte{"a bare ELF": []byte("\x7fELF\x02\x01\x01\x00rest of a binary"), "empty": nil} {
		if _, err := ReadBundle(bytes.NewReader(data)); !errors.Is(err, ErrNotBundle) {
			t.Errorf("%s: %v, want ErrNotBundle", name, err)
		}
	}
	if m, err := IndexOf(good); err != nil || m.Version != "1.2.0" {
		t.Errorf("IndexOf: %+v %v", m, err)
	}
}

// newTree makes a tree with version v1 current, as a package's postinst does.
func newTree(t *testing.T, v1 string) Tree {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the tree's links are Unix's; Windows switches the running .exe (docs/fleet.md)")
	}
	tr := Tree{Root: filepath.Join(t.TempDir(), "agent"), GOOS: runtime.GOOS}
	if err := os.MkdirAll(filepath.Join(tr.Root, v1), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tr.Binary(v1), []byte("v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(v1, filepath.Join(tr.Root, CurrentLink)); err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestTreeStageSwitchGuard(t *testing.T) {
	tr := newTree(t, "1.0.0")
	if found, v, err := FindTree(filepath.Join(tr.Root, CurrentLink, "yuzu-agent"), runtime.GOOS); err != nil || v != "1.0.0" || found.Root != tr.Root {
		t.Fatalf("FindTree: %+v %q %v", found, v, err)
	}
	if _, _, err := FindTree(filepath.Join(t.TempDir(), "yuzu-agent"), runtime.GOOS); err == nil {
		t.Error("a binary outside a tree was taken for one")
	}
	rel := newRelease(t, "agent: yes")
	b, _ := ReadBundle(bytes.NewReader(rel.bundle(t, "2.0.0", runtime.GOOS, runtime.GOARCH, []byte("v2"))))
	if err := tr.Stage(b); err != nil {
		t.Fatal(err)
	}
	if err := tr.Stage(b); err != nil { // again: a download that did not switch
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(tr.Binary("2.0.0")); string(got) != "v2" {
		t.Fatalf("staged %q", got)
	}
	state := filepath.Join(t.TempDir(), "update", StateFile)
	now := time.Now()
	if err := StartTrial(state, "2.0.0", "1.0.0", now); err != nil {
		t.Fatal(err)
	}
	if err := tr.Switch("2.0.0"); err != nil {
		t.Fatal(err)
	}
	if cur, _ := tr.Current(); cur != "2.0.0" {
		t.Fatalf("current %s", cur)
	}
	if prev, _ := tr.Previous(); prev != "1.0.0" {
		t.Fatalf("previous %s", prev)
	}
	// The first start is the trial's; the second, unconfirmed, rolls back, once.
	if d, err := Guard(tr, state, now); err != nil || !strings.Contains(d, "starts on trial") {
		t.Fatalf("first guard: %q %v", d, err)
	}
	if !OnTrial(state, "2.0.0") {
		t.Error("2.0.0 is not on trial")
	}
	if d, err := Guard(tr, state, now); err != nil || !strings.Contains(d, "rolled back from 2.0.0 to 1.0.0") {
		t.Fatalf("second guard: %q %v", d, err)
	}
	if cur, _ := tr.Current(); cur != "1.0.0" {
		t.Fatalf("after the rollback current is %s", cur)
	}
	st, _ := LoadState(state)
	if st.Bad["2.0.0"] == "" || len(st.Rollbacks) != 1 || st.Trial != nil {
		t.Errorf("state after the rollback: %+v", st)
	}
	if d, err := Guard(tr, state, now); err != nil || d != "no version on trial" {
		t.Errorf("third guard (no loop): %q %v", d, err)
	}
	// A confirmed trial is kept.
	b3, _ := ReadBundle(bytes.NewReader(rel.bundle(t, "3.0.0", runtime.GOOS, runtime.GOARCH, []byte("v3"))))
	_ = tr.Stage(b3)
	_ = StartTrial(state, "3.0.0", "1.0.0", now)
	_ = tr.Switch("3.0.0")
	_, _ = Guard(tr, state, now)
	if ok, err := Confirm(state, "3.0.0", now); !ok || err != nil {
		t.Fatalf("confirm: %v %v", ok, err)
	}
	if d, _ := Guard(tr, state, now); !strings.Contains(d, "passed its trial") {
		t.Errorf("after confirming: %q", d)
	}
	if cur, _ := tr.Current(); cur != "3.0.0" {
		t.Errorf("a confirmed version was rolled back: current %s", cur)
	}
	// Prune keeps current and previous, removes the rest and any leftovers.
	_ = os.Mkdir(filepath.Join(tr.Root, ".staging-9.9.9-abc"), 0o755)
	if err := tr.Prune(); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(tr.Root)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "1.0.0 3.0.0 current previous" {
		t.Errorf("after prune: %v", names)
	}
}
