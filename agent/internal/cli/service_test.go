package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
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
	w := newCheckWorld(t)
	conf := writeConfig(t, "server: fleet:443\ntls-system-roots: true\nplugin-dir: "+w.pluginDir+"\ndata-dir: "+w.dataDir+"\n")
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

// fakeSystemd points service at a unit path of the test's and records the commands
// it runs; fail, when set, says how a command fails.
func fakeSystemd(t *testing.T, fail func(argv []string) (string, error)) (unit string, ran *[]string) {
	t.Helper()
	unit = filepath.Join(t.TempDir(), "yuzu-agent.service")
	oldPath, oldTool := serviceDefinitionPath, serviceTool
	t.Cleanup(func() { serviceDefinitionPath, serviceTool = oldPath, oldTool })
	serviceDefinitionPath = map[string]string{"linux": unit}
	ran = &[]string{}
	serviceTool = func(_ context.Context, argv ...string) (string, error) {
		*ran = append(*ran, strings.Join(argv, " "))
		if fail != nil {
			return fail(argv)
		}
		return "", nil
	}
	return unit, ran
}

// A service manager that is missing or fails leaves no unit behind (or the one that
// was there), and its error is printed once, one line per line.
func TestServiceInstallFailureLeavesNothing(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the systemd leg")
	}
	w := newCheckWorld(t)
	conf := writeConfig(t, "tls-system-roots: true\nplugin-dir: "+w.pluginDir+"\ndata-dir: "+w.dataDir+"\n")
	missing := func([]string) (string, error) {
		return "", fmt.Errorf("subprocess: start /usr/bin/systemctl: %w", &fs.PathError{Op: "fork/exec", Path: "/usr/bin/systemctl", Err: fs.ErrNotExist})
	}
	unit, _ := fakeSystemd(t, missing)
	var stdout, stderr bytes.Buffer
	code := Main([]string{"--config", conf, "service", "install"}, &stdout, &stderr)
	if _, err := os.Stat(unit); code != exitFail || !os.IsNotExist(err) || !strings.Contains(stdout.String(), "removed "+unit+" again\n") {
		t.Errorf("systemctl missing: exit %d, unit %v:\n%s%s", code, err, stdout.String(), stderr.String())
	}
	if strings.Contains(stderr.String(), `\x0a`) || strings.Count(stderr.String(), "fork/exec") != 1 {
		t.Errorf("the error is not said once, as lines:\n%s", stderr.String())
	}

	// A manager that fails with output: the output once, the old unit put back.
	os.WriteFile(unit, []byte("[Unit]\n# the operator's\n"), 0o644)
	fakeSystemd(t, nil)
	serviceDefinitionPath = map[string]string{"linux": unit}
	serviceTool = func(_ context.Context, argv ...string) (string, error) {
		if argv[1] == "enable" {
			return "Failed to enable unit:\nUnit file is masked.", errors.New("/usr/bin/systemctl: exited (exit 1)")
		}
		return "", nil
	}
	stdout.Reset()
	stderr.Reset()
	code = Main([]string{"--config", conf, "service", "install"}, &stdout, &stderr)
	b, _ := os.ReadFile(unit)
	if code != exitFail || string(b) != "[Unit]\n# the operator's\n" || strings.Count(stdout.String()+stderr.String(), "Unit file is masked.") != 1 || !strings.Contains(stdout.String(), "put the earlier "+unit+" back") {
		t.Errorf("systemctl enable failing: exit %d, unit %q:\n%s%s", code, b, stdout.String(), stderr.String())
	}

	// Uninstall without a manager removes the unit and says so; with a manager that
	// cannot stop the service it keeps it.
	unit, _ = fakeSystemd(t, missing)
	os.WriteFile(unit, []byte("x"), 0o644)
	stdout.Reset()
	stderr.Reset()
	if code := Main([]string{"service", "uninstall"}, &stdout, &stderr); code != exitOK || !strings.Contains(stderr.String(), "no service manager to stop the service") {
		t.Errorf("uninstall without systemctl: exit %d:\n%s%s", code, stdout.String(), stderr.String())
	}
	if _, err := os.Stat(unit); !os.IsNotExist(err) {
		t.Errorf("the unit stayed: %v", err)
	}
	unit, _ = fakeSystemd(t, func([]string) (string, error) { return "", errors.New("/usr/bin/systemctl: timed out (exit -1)") })
	os.WriteFile(unit, []byte("x"), 0o644)
	if code := Main([]string{"service", "uninstall"}, &stdout, &stderr); code != exitFail {
		t.Errorf("uninstall with a failing systemctl: exit %d", code)
	}
	if _, err := os.Stat(unit); err != nil {
		t.Errorf("the unit of a service that may still run went: %v", err)
	}
}

// install checks the file the service will read, as the service will read it (no
// YUZU_ variables), and installs nothing it could not start with.
func TestServiceInstallChecksTheConfiguration(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the systemd leg")
	}
	unit, ran := fakeSystemd(t, nil)
	w := newCheckWorld(t)
	conf := writeConfig(t, "heartbeat: fast\ntls-system-roots: true\nplugin-dir: "+w.pluginDir+"\ndata-dir: "+w.dataDir+"\n")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"--config", conf, "service", "install"}, &stdout, &stderr)
	if _, err := os.Stat(unit); code != exitFail || !os.IsNotExist(err) || len(*ran) != 0 ||
		!strings.Contains(stderr.String(), `problem: --heartbeat "fast"`) || !strings.Contains(stderr.String(), "not installed: the service would not start with "+conf) {
		t.Errorf("exit %d, ran %v:\n%s%s", code, *ran, stdout.String(), stderr.String())
	}
	// The shell's YUZU_HEARTBEAT is not the service's: a bad one here is no problem there.
	t.Setenv("YUZU_HEARTBEAT", "fast")
	os.WriteFile(conf, []byte("tls-system-roots: true\nplugin-dir: "+w.pluginDir+"\ndata-dir: "+w.dataDir+"\n"), 0o600)
	stdout.Reset()
	stderr.Reset()
	if code := Main([]string{"--config", conf, "--heartbeat", "1m", "service", "install"}, &stdout, &stderr); code != exitOK {
		t.Errorf("a good file: exit %d:\n%s%s", code, stdout.String(), stderr.String())
	}
}
