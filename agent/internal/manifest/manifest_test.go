package manifest

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const sumA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

func TestParse(t *testing.T) {
	m, err := Parse([]byte("# comment\n\n" + sumA + "  yuzu-plugin-tags\n" + strings.Repeat("b", 64) + " *yuzu-plugin-bin\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || len(m["yuzu-plugin-tags"]) != 32 || len(m["yuzu-plugin-bin"]) != 32 {
		t.Fatalf("manifest = %v", m)
	}
	bad := map[string]string{
		"short sum":    "abc  yuzu-plugin-x\n",
		"not hex":      strings.Repeat("z", 64) + "  yuzu-plugin-x\n",
		"one space":    sumA + " yuzu-plugin-x\n",
		"no name":      sumA + "  \n",
		"path":         sumA + "  ../yuzu-plugin-x\n",
		"listed twice": sumA + "  yuzu-plugin-x\n" + sumA + "  yuzu-plugin-x\n",
	}
	for name, text := range bad {
		if _, err := Parse([]byte(text)); err == nil {
			t.Errorf("%s: accepted %q", name, text)
		} else if !strings.Contains(err.Error(), "line ") {
			t.Errorf("%s: error %q does not name the line", name, err)
		}
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "yuzu-plugin-x")
	if err := os.WriteFile(bin, []byte("hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	hash := sha256.Sum256([]byte("hello\n"))
	sum := hash[:]
	m := Manifest{"yuzu-plugin-x": sum, "yuzu-plugin-a": bytes.Repeat([]byte{1}, 32)}
	if err := m.Write(dir); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, FileName))
	// sha256sum of "hello\n", as coreutils prints it; the a-line sorts first.
	want := "0101010101010101010101010101010101010101010101010101010101010101  yuzu-plugin-a\n" +
		"5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03  yuzu-plugin-x\n"
	if string(data) != want {
		t.Errorf("manifest text:\n%s\nwant:\n%s", data, want)
	}
	back, err := Read(dir)
	if err != nil || !bytes.Equal(back["yuzu-plugin-x"], sum) {
		t.Errorf("Read = %v, %v", back, err)
	}
}

// The manifest is 0644 whatever the umask and whatever mode an older one had.
func TestWriteModeWhateverUmask(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, []byte("old\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	old := setUmask(0)
	defer setUmask(old)
	if err := (Manifest{"yuzu-plugin-a": bytes.Repeat([]byte{2}, 32)}).Write(dir); err != nil {
		t.Fatal(err)
	}
	want := os.FileMode(0o644)
	if runtime.GOOS == "windows" {
		// A Windows mode is only the read-only attribute: 0644 has the owner-write
		// bit, so the file is writable, which Go reports as 0666.
		want = 0o666
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != want {
		t.Fatalf("mode %v, %v; want %v", fi.Mode(), err, want)
	}
}
