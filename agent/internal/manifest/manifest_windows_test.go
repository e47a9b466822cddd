package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/windows"
)

// TestReadChecksDACL: plugins.sha256 as written is accepted; given a DACL that lets
// Everyone write (Wine stores it as mode 0777 and reads it back as an Everyone entry
// with write rights), Read refuses it, naming the file and Everyone's SID. Before
// safefile.TrustedFile read the DACL on Windows, Read accepted it.
func TestReadChecksDACL(t *testing.T) {
	dir := t.TempDir()
	m := Manifest{"yuzu-plugin-x": make([]byte, 32)}
	if err := m.Write(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); err != nil {
		t.Fatalf("a manifest only its owner may write was refused: %v", err)
	}
	path := filepath.Join(dir, FileName)
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
	_, err = Read(dir)
	t.Logf("refused: %v", err)
	if err == nil || !strings.Contains(err.Error(), path+" is writable by") || !strings.Contains(err.Error(), "S-1-1-0") {
		t.Errorf("a manifest Everyone may write: got %v", err)
	}
	_ = os.Remove(path)
}
