package supervisor

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/windows"
)

// TestImageChecksDACL: a plugin binary as written is accepted by discover and
// openImage; given a DACL that lets Everyone write, both refuse it with a
// RefusedError naming the file and Everyone's SID. Before safefile.TrustedFile and
// TrustedPath read the DACL on Windows, both accepted it.
func TestImageChecksDACL(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "yuzu-plugin-x")
	data := []byte("not really a plugin")
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	b := Binary{Path: path, Checksum: sum[:]}
	img, err := openImage(b)
	if err != nil {
		t.Fatalf("a binary only its owner may write was refused: %v", err)
	}
	img.Release()
	if err := checkFile(path); err != nil {
		t.Fatalf("checkFile refused a binary only its owner may write: %v", err)
	}
	sd, err := windows.SecurityDescriptorFromString("D:P(A;;FA;;;SY)(A;;FA;;;BA)(A;;FA;;;WD)")
	if err != nil {
		t.Fatal(err)
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		t.Fatal(err)
	}
	if err := windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil); err != nil {
		t.Fatal(err)
	}
	for what, err := range map[string]error{"openImage": func() error {
		img, err := openImage(b)
		if err == nil {
			img.Release()
		}
		return err
	}(), "checkFile": checkFile(path)} {
		t.Logf("%s refused: %v", what, err)
		var re *RefusedError
		if !errors.As(err, &re) || re.Path != path || !strings.Contains(err.Error(), "writable by") || !strings.Contains(err.Error(), "S-1-1-0") {
			t.Errorf("%s of a binary Everyone may write: got %v", what, err)
		}
	}
}
