//go:build !windows

package trust

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Mode bits and owners as Unix has them; Windows reads the owner and DACL instead
// (catalog_windows_test.go).

func TestLoadRefusesUntrustedCatalog(t *testing.T) {
	dir := t.TempDir()
	c := &Catalog{Plugins: map[string]*Entry{}}
	if err := c.Save(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(Path(dir), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "writable") {
		t.Errorf("a world-writable catalog: %v", err)
	}
	os.Remove(Path(dir))
	if err := os.Symlink("/etc/hostname", Path(dir)); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a catalog that is a link: %v", err)
	}
}

func TestReadSource(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the refusals are about files other users own")
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "yuzu-plugin-procs")
	os.WriteFile(good, []byte("bytes"), 0o755)
	if b, err := ReadSource(good); err != nil || string(b) != "bytes" {
		t.Fatalf("a root-owned file: %q %v", b, err)
	}
	theirs := filepath.Join(dir, "theirs")
	os.WriteFile(theirs, []byte("bytes"), 0o755)
	os.Chown(theirs, 65534, 65534)
	if _, err := ReadSource(theirs); err == nil || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("a file another user owns: %v", err)
	}
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	inOpen := filepath.Join(open, "yuzu-plugin-procs")
	os.WriteFile(inOpen, []byte("bytes"), 0o755)
	if _, err := ReadSource(inOpen); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("a file in a world-writable directory: %v", err)
	}
	os.Chmod(open, 0o777|os.ModeSticky) // sticky, as /tmp: others cannot swap our file
	if _, err := ReadSource(inOpen); err != nil {
		t.Errorf("a root-owned file in a sticky directory: %v", err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(good, link)
	if _, err := ReadSource(link); err == nil {
		t.Error("followed a symbolic link")
	}
}

// letEveryoneWrite makes path writable by every user.
func letEveryoneWrite(t *testing.T, path string) {
	t.Helper()
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
}

// modeChecked: the catalog's permission bits are Unix's to compare.
const modeChecked = true
