package trust

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/windows"
)

// TestLoadChecksDACL: the catalog as written is accepted; given a DACL that lets
// Everyone write (Wine stores it as mode 0777 and reads it back as an Everyone entry
// with write rights), Load refuses it, naming the file and Everyone's SID.
func TestLoadChecksDACL(t *testing.T) {
	dir := t.TempDir()
	c := &Catalog{Plugins: map[string]*Entry{"x": {File: "yuzu-plugin-x.exe", SHA256: strings.Repeat("00", 32)}}}
	if err := c.Save(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err != nil {
		t.Fatalf("a catalog only its owner may write was refused: %v", err)
	}
	path := Path(dir)
	letEveryoneWrite(t, path)
	_, err := Load(dir)
	t.Logf("refused: %v", err)
	if err == nil || !strings.Contains(err.Error(), path+" is writable by") || !strings.Contains(err.Error(), "S-1-1-0") {
		t.Errorf("a catalog Everyone may write: got %v", err)
	}
	_ = os.Remove(path)
}

// letEveryoneWrite gives path a DACL under which Everyone may write it.
func letEveryoneWrite(t *testing.T, path string) {
	t.Helper()
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
}

// modeChecked: Windows keeps no Unix permission bits to compare.
const modeChecked = false
