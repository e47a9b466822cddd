package trust

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"aead.dev/minisign"
)

// signer is a test publisher key.
type signer struct {
	pub  minisign.PublicKey
	priv minisign.PrivateKey
}

func newSigner(t *testing.T) signer {
	t.Helper()
	pub, priv, err := minisign.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return signer{pub, priv}
}

// pubLine is the key as a publisher file or key set writes it.
func (s signer) pubLine() string { return s.pub.String() }

// sign signs as `minisign -S` does by default (prehashed).
func (s signer) sign(msg []byte) []byte {
	r := minisign.NewReader(bytes.NewReader(msg))
	_, _ = io.Copy(io.Discard, r)
	return r.Sign(s.priv)
}

// writePublisher writes <dir>/<name>.pub as minisign would write the key file, plus
// extra lines.
func writePublisher(t *testing.T, dir, name string, extra string, keys ...signer) {
	t.Helper()
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "untrusted comment: minisign public key %s\n%s\n", KeyID(k.pub.ID()), k.pubLine())
	}
	b.WriteString(extra)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".pub"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func loadKeys(t *testing.T, dir, state string) *Keys {
	t.Helper()
	k, err := LoadKeys(dir, state)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestVerify(t *testing.T) {
	a, b, stranger := newSigner(t), newSigner(t), newSigner(t)
	dir := filepath.Join(t.TempDir(), "publishers")
	writePublisher(t, dir, "acme", "plugins: procs disk_*\n", a, b)
	k := loadKeys(t, dir, "")
	if !k.Configured() {
		t.Fatal("keys not configured")
	}
	bin := []byte("\x7fELF a plugin's bytes")

	got, err := k.Verify("procs", bin, a.sign(bin))
	if err != nil || got.Publisher != "acme" || len(got.KeyIDs) != 1 || got.KeyIDs[0] != KeyID(a.pub.ID()) {
		t.Fatalf("good signature: %+v, %v", got, err)
	}
	// Signed by both keys during a rotation: both reported.
	both := append(append(a.sign(bin), '\n'), b.sign(bin)...)
	if got, err := k.Verify("disk_usage", bin, both); err != nil || len(got.KeyIDs) != 2 {
		t.Errorf("two signatures: %+v, %v", got, err)
	}
	refused := []struct {
		name       string
		plugin     string
		bin, sig   []byte
		wantReason string
	}{
		{"unknown key", "procs", bin, stranger.sign(bin), "which no configured publisher has"},
		{"tampered bytes", "procs", append([]byte{}, append(bin, 'x')...), a.sign(bin), "does not match these bytes"},
		{"not this publisher's plugin", "tags", bin, a.sign(bin), "may not sign plugin tags"},
		{"no signature at all", "procs", bin, []byte("nonsense\n"), "four lines each"},
	}
	for _, c := range refused {
		_, err := k.Verify(c.plugin, c.bin, c.sig)
		if err == nil || !strings.Contains(err.Error(), c.wantReason) {
			t.Errorf("%s: %v, want %q", c.name, err, c.wantReason)
		}
	}

	// A revoked key's signature is worth nothing, and an entry it alone signed is no
	// longer trusted.
	writePublisher(t, dir, "acme", "plugins: procs disk_*\nrevoked: "+KeyID(a.pub.ID())+"\n", a, b)
	k = loadKeys(t, dir, "")
	if _, err := k.Verify("procs", bin, a.sign(bin)); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("revoked key: %v", err)
	}
	e := &Entry{Publisher: "acme", SignedBy: []string{KeyID(a.pub.ID())}, name: "procs"}
	if why := k.Revoked(e); !strings.Contains(why, "revoked") {
		t.Errorf("entry signed by a revoked key: %q", why)
	}
	e.SignedBy = append(e.SignedBy, KeyID(b.pub.ID()))
	if why := k.Revoked(e); why != "" {
		t.Errorf("entry also signed by a good key: %q", why)
	}
	if why := loadKeys(t, t.TempDir(), "").Revoked(e); !strings.Contains(why, "no longer configured") {
		t.Errorf("publisher gone: %q", why)
	}
}

func TestLoadKeysRefusesBadFiles(t *testing.T) {
	good := newSigner(t)
	cases := map[string]string{
		"no key":        "# nothing\n",
		"bad key":       "RWQnotakey\n",
		"bad pattern":   good.pubLine() + "\nplugins: pro-cs\n",
		"bad revoked":   good.pubLine() + "\nrevoked: xyz\n",
		"bad serial":    good.pubLine() + "\nserial: -1\n",
		"worldwritable": good.pubLine() + "\n",
	}
	for name, content := range cases {
		dir := t.TempDir()
		path := filepath.Join(dir, "acme.pub")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if name == "worldwritable" {
			letEveryoneWrite(t, path)
		}
		if _, err := LoadKeys(dir, ""); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming %s", name, err, path)
		}
	}
	if k, err := LoadKeys(filepath.Join(t.TempDir(), "missing"), ""); err != nil || k.Configured() {
		t.Errorf("a missing publishers dir: %v, configured %v", err, k.Configured())
	}
}

// keySet writes a key-set document.
func keySet(publisher string, serial int, keys ...signer) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "yuzu-keyset 1\npublisher %s\nserial %d\n", publisher, serial)
	for _, k := range keys {
		b.WriteString("key " + k.pubLine() + "\n")
	}
	return []byte(b.String())
}

// A rotation from key A to key B: serial 1 lists A and B (signed with A), serial 2
// lists B (signed with B). A machine online throughout takes each when it comes; one
// that was offline through both takes them in order later, and ends trusting B alone.
func TestKeyRotation(t *testing.T) {
	a, b := newSigner(t), newSigner(t)
	dir := filepath.Join(t.TempDir(), "publishers")
	writePublisher(t, dir, "acme", "", a)
	step1, step2 := keySet("acme", 1, a, b), keySet("acme", 2, b)
	sig1, sig2 := a.sign(step1), b.sign(step2)
	v3 := []byte("version 3, signed with B only")

	online := loadKeys(t, dir, t.TempDir())
	if _, err := online.Verify("procs", v3, b.sign(v3)); err == nil {
		t.Fatal("B trusted before the rotation")
	}
	if res, err := online.Advance(step1, sig1); err != nil || !res.Applied || res.To != 1 {
		t.Fatalf("step 1: %+v, %v", res, err)
	}
	if _, err := online.Verify("procs", v3, b.sign(v3)); err != nil {
		t.Errorf("B not trusted during the rotation: %v", err)
	}
	if _, err := online.Verify("procs", v3, a.sign(v3)); err != nil {
		t.Errorf("A not trusted during the rotation: %v", err)
	}
	if _, err := online.Advance(step2, sig2); err != nil {
		t.Fatal(err)
	}
	if _, err := online.Verify("procs", v3, a.sign(v3)); err == nil {
		t.Error("A still trusted after the rotation")
	}

	// Offline through it: step 2 alone cannot be taken (B is unknown), step 1 then
	// step 2 can.
	state := t.TempDir()
	offline := loadKeys(t, dir, state)
	if _, err := offline.Advance(step2, sig2); err == nil || !strings.Contains(err.Error(), "not signed by any current key") {
		t.Errorf("step 2 before step 1: %v", err)
	}
	for i, s := range [][2][]byte{{step1, sig1}, {step2, sig2}} {
		if _, err := offline.Advance(s[0], s[1]); err != nil {
			t.Fatalf("offline machine, step %d: %v", i+1, err)
		}
	}
	if _, err := offline.Verify("procs", v3, b.sign(v3)); err != nil {
		t.Errorf("the machine that was offline does not trust B: %v", err)
	}
	// The updates are kept: a restart applies them again.
	again := loadKeys(t, dir, state)
	if p := again.Publishers["acme"]; p.Serial != 2 || len(p.Keys) != 1 || p.Keys[0].ID() != b.pub.ID() {
		t.Errorf("after a restart: serial %d, %d keys", p.Serial, len(p.Keys))
	}
	// An old update again changes nothing; a forged one is refused.
	if res, err := again.Advance(step1, sig1); err != nil || res.Applied {
		t.Errorf("an old update: %+v, %v", res, err)
	}
	forged := keySet("acme", 3, a)
	if _, err := again.Advance(forged, a.sign(forged)); err == nil {
		t.Error("an update signed with the retired key A was taken")
	}
}

func TestParseKeySet(t *testing.T) {
	k := newSigner(t)
	bad := map[string]string{
		"magic":     "yuzu-keyset 2\npublisher acme\nserial 1\nkey " + k.pubLine(),
		"publisher": "yuzu-keyset 1\nserial 1\nkey " + k.pubLine(),
		"serial":    "yuzu-keyset 1\npublisher acme\nkey " + k.pubLine(),
		"no key":    "yuzu-keyset 1\npublisher acme\nserial 1\n",
		"bad word":  "yuzu-keyset 1\npublisher acme\nserial 1\nkey " + k.pubLine() + "\nexpires 2030\n",
	}
	for name, doc := range bad {
		if _, err := ParseKeySet([]byte(doc)); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}
