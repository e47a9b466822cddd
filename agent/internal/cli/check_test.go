package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// checkWorld is a plugin dir with an empty catalog, a data dir and a token file.
type checkWorld struct{ pluginDir, dataDir, token string }

func newCheckWorld(t *testing.T) checkWorld {
	t.Helper()
	base := t.TempDir()
	w := checkWorld{filepath.Join(base, "plugins"), filepath.Join(base, "data"), filepath.Join(base, "token")}
	for _, d := range []string{w.pluginDir, w.dataDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(w.pluginDir, "catalog.json"), []byte(`{"format":1,"plugins":{}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writePrivateFile(t, w.token, []byte("s3cret-token\n"))
	return w
}

func (w checkWorld) check(args ...string) (int, string) {
	var stdout, stderr bytes.Buffer
	code := Main(append([]string{"--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "--tls-system-roots"}, append(args, "config", "check")...), &stdout, &stderr)
	return code, stdout.String() + stderr.String()
}

func TestConfigCheck(t *testing.T) {
	w := newCheckWorld(t)
	unix := runtime.GOOS != "windows"
	// A clean setup: exit 0, no line but the file and the tally.
	code, out := w.check("--enrollment-token-file", w.token)
	if code != exitOK || !strings.HasSuffix(out, "ok: 0 problems, 0 warnings\n") || strings.Contains(out, "s3cret") {
		t.Fatalf("a clean setup: exit %d\n%s", code, out)
	}

	// Problems: exit 1, each named; the token never printed.
	empty := filepath.Join(t.TempDir(), "empty")
	two := filepath.Join(t.TempDir(), "two")
	writePrivateFile(t, empty, []byte(" \n"))
	writePrivateFile(t, two, []byte("a\nb\n"))
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"an empty token file", []string{"--enrollment-token-file", empty}, "problem: --enrollment-token-file: " + empty + " is empty"},
		{"two lines", []string{"--enrollment-token-file", two}, "holds more than one line or a control character"},
		{"a missing token file", []string{"--enrollment-token-file", filepath.Join(w.dataDir, "nope")}, "problem: --enrollment-token-file: "},
		{"both token settings", []string{"--enrollment-token-file", w.token, "--enrollment-token", "x"}, "problem: --enrollment-token and --enrollment-token-file both give the enrollment token: keep one"},
		{"a heartbeat run refuses", []string{"--heartbeat", "fast"}, `problem: --heartbeat "fast"`},
	} {
		code, out := w.check(c.args...)
		if code != exitFail || !strings.Contains(out, c.want) || !strings.Contains(out, "not ok: ") || strings.Contains(out, "s3cret") {
			t.Errorf("%s: exit %d, want 1 and %q:\n%s", c.name, code, c.want, out)
		}
	}

	// Warnings: exit 0, or 1 with --strict.
	code, out = w.check("--enrollment-token", "s3cret-token")
	if code != exitOK || !strings.Contains(out, "warning: the enrollment token is on the command line (--enrollment-token), where every local user can read it") || strings.Contains(out, "s3cret") {
		t.Errorf("a token on the command line: exit %d\n%s", code, out)
	}
	if code, out := w.check("--enrollment-token", "s3cret-token", "--strict"); code != exitFail || !strings.HasSuffix(out, "not ok (--strict): 0 problems, 1 warning\n") {
		t.Errorf("--strict: exit %d\n%s", code, out)
	}
	cfgPath := filepath.Join(t.TempDir(), "agent.yaml")
	writePrivateFile(t, cfgPath, []byte("enrollment-token: s3cret-token\nplugins:\n  firwall:\n    enabled: false\n"))
	code, out = w.check("--config", cfgPath)
	if code != exitOK || !strings.Contains(out, "warning: plugins.firwall ("+cfgPath+":3) names no installed plugin, so its settings apply to nothing (installed: none)") {
		t.Errorf("a plugin section for no plugin: exit %d\n%s", code, out)
	}
	if unix {
		// A plugin dir run would not use.
		os.Chmod(w.pluginDir, 0o777)
		if code, out := w.check(); code != exitFail || !strings.Contains(out, "problem: ") || !strings.Contains(out, "writable") {
			t.Errorf("a world-writable plugin dir: exit %d\n%s", code, out)
		}
		os.Chmod(w.pluginDir, 0o755)

		os.Chmod(cfgPath, 0o644)
		os.Chmod(w.token, 0o640)
		key := filepath.Join(t.TempDir(), "key.pem")
		os.WriteFile(key, []byte("not a key"), 0o644)
		_, out = w.check("--config", cfgPath)
		if !strings.Contains(out, "warning: the configuration file "+cfgPath+" holds enrollment-token and is readable by group or others (mode 0644)") {
			t.Errorf("a readable file holding the token:\n%s", out)
		}
		os.WriteFile(cfgPath, []byte("server: a:1\n"), 0o644)
		_, out = w.check("--config", cfgPath, "--enrollment-token-file", w.token, "--client-cert", key, "--client-key", key)
		for _, want := range []string{
			"warning: the enrollment token file " + w.token + " is readable by group or others (mode 0640)",
			"warning: the client key " + key + " is readable by group or others (mode 0644)",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("want %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "the configuration file") {
			t.Errorf("a readable file without a secret was warned about:\n%s", out)
		}
	}
}
