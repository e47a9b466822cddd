package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestServiceInstallSteps installs into a temporary path with the service manager's
// commands recorded, not run: no test installs a service on the machine it runs on.
func TestServiceInstallSteps(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the systemd leg; launchd is checked by the service package's plist test")
	}
	unit := filepath.Join(t.TempDir(), "yuzu-agent.service")
	oldPath, oldTool := serviceDefinitionPath, serviceTool
	t.Cleanup(func() { serviceDefinitionPath, serviceTool = oldPath, oldTool })
	serviceDefinitionPath = map[string]string{"linux": unit}
	var ran []string
	serviceTool = func(_ context.Context, argv ...string) (string, error) {
		ran = append(ran, strings.Join(argv, " "))
		return "", nil
	}
	conf := writeConfig(t, "server: fleet:443\n")
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"--config", conf, "service", "install"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("install: exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(unit)
	if err != nil || !strings.Contains(string(b), `"--config" "`+conf+`" "run"`) {
		t.Errorf("unit = %q, %v", b, err)
	}
	if want := "/usr/bin/systemctl daemon-reload|/usr/bin/systemctl enable --now yuzu-agent.service"; strings.Join(ran, "|") != want {
		t.Errorf("ran %q, want %q", ran, want)
	}
	ran = nil
	if code := Main([]string{"service", "uninstall"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("uninstall: exit %d: %s", code, stderr.String())
	}
	if _, err := os.Stat(unit); !os.IsNotExist(err) {
		t.Errorf("unit still there: %v", err)
	}
	if want := "/usr/bin/systemctl disable --now yuzu-agent.service|/usr/bin/systemctl daemon-reload"; strings.Join(ran, "|") != want {
		t.Errorf("ran %q, want %q", ran, want)
	}
}
