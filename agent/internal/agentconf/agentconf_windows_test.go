package agentconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/windows"
)

// TestLoadChecksDACL reads a real file's owner and DACL: as written it is accepted;
// given a DACL that lets Everyone write, it is refused, naming Everyone's SID. Under
// Wine (docs/windows.md) a DACL set is stored as mode bits (0777 here) and read back
// as an Everyone entry with write rights, so both systems refuse it.
func TestLoadChecksDACL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(path, []byte("server: fleet:443\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	keys := map[string]Kind{"server": Text}
	if _, err := Load(path, keys); err != nil {
		t.Fatalf("a file only its owner may write was refused: %v", err)
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
	_, err = Load(path, keys)
	t.Logf("refused: %v", err)
	if err == nil || !strings.Contains(err.Error(), "writable by") || !strings.Contains(err.Error(), "S-1-1-0") {
		t.Errorf("a file Everyone may write: got %v", err)
	}
}
