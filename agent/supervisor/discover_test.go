package supervisor

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/yuzugo/yuzu/agent/internal/manifest"
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
	m := manifest.Manifest{}
	for _, n := range []string{"yuzu-plugin-good", "yuzu-plugin-writable", "yuzu-plugin-dir"} {
		sum := make([]byte, 32)
		if data, err := os.ReadFile(filepath.Join(dir, n)); err == nil {
			s := sha256.Sum256(data)
			sum = s[:]
		}
		m[n] = sum
	}
	if err := m.Write(dir); err != nil {
		t.Fatal(err)
	}
	bins, err := discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(bins) != 5 {
		t.Fatalf("found %v, want good, writable, unlisted, bad-name and dir", sortedNames(bins))
	}
	if bins["good"].refused != nil || bins["good"].checksum == nil {
		t.Errorf("good: refused %v", bins["good"].refused)
	}
	wants := map[string]string{
		"writable": "group- or world-writable (mode 0775)",
		"unlisted": "not listed in plugins.sha256",
		"bad-name": "plugin name must be",
		"dir":      "not a regular file",
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

func TestDiscoverWithoutManifest(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "yuzu-plugin-x"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	bins, err := discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r := bins["x"].refused; r == nil || !strings.Contains(r.Error(), "no plugins.sha256") {
		t.Errorf("refused = %v", r)
	}
	if _, err := discover(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing plugin dir must be an error")
	}
}
