package supervisor

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/yuzugo/yuzu/agent/trust"
)

func TestDiscover(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(name), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	write("yuzu-plugin-good", 0o755)
	write("yuzu-plugin-writable", 0o775)
	write("yuzu-plugin-unlisted", 0o755)
	write("yuzu-plugin-bad-name", 0o755)
	write("README.md", 0o644)
	write("yuzu-plugin-good.tmp.0123456789abcdef", 0o755)
	if err := os.Mkdir(filepath.Join(dir, "yuzu-plugin-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	cat := &trust.Catalog{Plugins: map[string]*trust.Entry{}}
	for _, n := range []string{"good", "writable"} {
		data, err := os.ReadFile(filepath.Join(dir, "yuzu-plugin-"+n))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		cat.Plugins[n] = &trust.Entry{File: "yuzu-plugin-" + n, SHA256: hex.EncodeToString(sum[:]), Version: "1.0.0"}
	}
	cat.Plugins["dir"] = &trust.Entry{File: "yuzu-plugin-dir", SHA256: strings.Repeat("00", 32)}
	cat.Plugins["elsewhere"] = &trust.Entry{File: "yuzu-plugin-elsewhere", SHA256: strings.Repeat("00", 32), OS: "plan9", Arch: "mips"}
	if err := cat.Save(dir); err != nil {
		t.Fatal(err)
	}
	view, err := discover(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	bins := view.bins
	if len(bins) != 6 {
		t.Fatalf("found %v, want good, writable, unlisted, bad-name, dir and elsewhere", sortedNames(bins))
	}
	if g := bins["good"]; g.refused != nil || g.Checksum == nil || g.Version != "1.0.0" || g.Trust != "unsigned" || !strings.HasPrefix(g.Build, "1.0.0 (sha256 ") {
		t.Errorf("good: %+v", g)
	}
	wants := map[string]string{
		"writable":  "group- or world-writable (mode 0775)",
		"unlisted":  "not in catalog.json (add it with `yuzu-agent plugins add`)",
		"elsewhere": "built for plan9/mips",
		"bad-name":  "plugin name must be",
		"dir":       "not a regular file",
	}
	if runtime.GOOS == "windows" {
		// Mode bits mean nothing there: who may write a binary is its ACL's business
		// (safefile.TrustedPath, docs/agent.md), and Wine maps no group bits into the DACL, so 0775 is no reason to refuse there.
		delete(wants, "writable")
		if bins["writable"].refused != nil {
			t.Errorf("writable: refused on Windows: %v", bins["writable"].refused)
		}
	}
	for name, want := range wants {
		var re *RefusedError
		if !errors.As(bins[name].refused, &re) || !strings.Contains(re.Error(), want) || !strings.Contains(re.Error(), filepath.Join(dir, "yuzu-plugin-"+name)) {
			t.Errorf("%s: refused = %v, want a refusal naming the file and %q", name, bins[name].refused, want)
		}
	}
}

func TestDiscoverWithoutCatalog(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "yuzu-plugin-x"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	view, err := discover(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := view.bins["x"].refused; r == nil || !strings.Contains(r.Error(), "no catalog.json in the plugin dir") {
		t.Errorf("refused = %v", r)
	}
	if _, err := discover(filepath.Join(dir, "missing"), nil); err == nil {
		t.Error("a missing plugin dir must be an error")
	}
	// A damaged catalog refuses every plugin, naming the problem.
	if err := os.WriteFile(trust.Path(dir), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	view, _ = discover(dir, nil)
	if r := view.bins["x"].refused; r == nil || !strings.Contains(r.Error(), "unusable catalog: catalog.json") {
		t.Errorf("damaged catalog: refused = %v", r)
	}
}

// An old plugin dir with plugins.sha256 is migrated once, and says so.
func TestDiscoverMigrates(t *testing.T) {
	dir := t.TempDir()
	data := []byte("plugin bytes")
	if err := os.WriteFile(filepath.Join(dir, "yuzu-plugin-x"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if err := os.WriteFile(filepath.Join(dir, trust.LegacyName), []byte(hex.EncodeToString(sum[:])+"  yuzu-plugin-x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	view, err := discover(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b := view.bins["x"]; b.refused != nil || len(view.notes) != 1 || !strings.Contains(view.notes[0], "was made from plugins.sha256 (1 plugins") {
		t.Errorf("migration: %+v, notes %q", b, view.notes)
	}
	if view, _ = discover(dir, nil); len(view.notes) != 0 {
		t.Errorf("migrated twice: %q", view.notes)
	}
}
