package cli

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	// Never the machine's own /etc/yuzu/agent.yaml: a test names its file.
	defaultConfigPath = func(string, func(string) string) string {
		return filepath.Join(os.TempDir(), "yuzu-cli-test-no-such-dir", "agent.yaml")
	}
	os.Exit(m.Run())
}

// writeConfig writes a configuration file into a fresh directory and returns its path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConfigPrecedence(t *testing.T) {
	file := writeConfig(t, `# agent settings
server: file.example:443
heartbeat: 45s
log-level: warn
no-tls: true
timeout: 120
plugins:
  firewall:
    enabled: false
  tags:
    limits: {memory_mib: 64, tasks: 32}
    idle-stop: 0
  filesystem:
    idle-stop: 90s
`)
	file2 := writeConfig(t, "idle-stop: 2m\nplugins:\n  tags: {idle-stop: 10m}\n")
	cases := []struct {
		name    string
		args    []string
		env     map[string]string
		setting string
		value   func(config) string
		want    string
		source  string
	}{
		{"file beats default", []string{"--config", file, "run"}, nil, "server", func(c config) string { return c.server }, "file.example:443", "file " + file + ":2"},
		{"env beats file", []string{"--config", file, "run"}, map[string]string{"YUZU_SERVER": "env.example:443"}, "server", func(c config) string { return c.server }, "env.example:443", "env YUZU_SERVER"},
		{"flag beats env and file", []string{"--config", file, "run", "--server", "flag.example:1"}, map[string]string{"YUZU_SERVER": "env.example:443"}, "server", func(c config) string { return c.server }, "flag.example:1", "flag"},
		{"default when nobody sets it", []string{"--config", file, "run"}, nil, "ca-cert", func(c config) string { return c.caCert }, "", "default"},
		{"YUZU_CONFIG names the file", []string{"run"}, map[string]string{"YUZU_CONFIG": file}, "heartbeat", func(c config) string { return c.heartbeat }, "45s", "file " + file + ":3"},
		{"file switch", []string{"--config", file, "run"}, nil, "no-tls", func(c config) string { return boolText(c.noTLS) }, "true", "file " + file + ":5"},
		{"flag switch beats file switch", []string{"--config", file, "run", "--no-tls=false"}, nil, "no-tls", func(c config) string { return boolText(c.noTLS) }, "false", "flag"},
		{"env switch beats file switch", []string{"--config", file, "run"}, map[string]string{"YUZU_NO_TLS": "0"}, "no-tls", func(c config) string { return boolText(c.noTLS) }, "false", "env YUZU_NO_TLS"},
		{"file log level", []string{"--config", file, "exec"}, nil, "log-level", func(c config) string { return c.logLevel }, "warn", "file " + file + ":4"},
		{"file timeout is set, beating a ttl", []string{"--config", file, "exec"}, nil, "timeout", func(c config) string { return c.timeout.String() + boolText(c.timeoutSet) }, "2m0strue", "file " + file + ":6"},
		{"per-plugin limits become plugin-limits", []string{"--config", file, "run"}, nil, "plugin-limits", func(c config) string { return c.limits }, "tags:memory_mib=64,tasks=32", "file " + file + ":11"},
		{"env plugin-limits replaces the file's", []string{"--config", file, "run"}, map[string]string{"YUZU_PLUGIN_LIMITS": "*:cpus=2"}, "plugin-limits", func(c config) string { return c.limits }, "*:cpus=2", "env YUZU_PLUGIN_LIMITS"},
		{"per-plugin idle stops become idle-stop", []string{"--config", file, "run"}, nil, "idle-stop", func(c config) string { return c.idleStop }, "filesystem:1m30s;tags:0s", "file " + file + ":14"},
		{"file idle-stop comes before its per-plugin ones", []string{"--config", file2, "run"}, nil, "idle-stop", func(c config) string { return c.idleStop }, "2m;tags:10m0s", "file " + file2 + ":1"},
		{"env idle-stop beats the file's", []string{"--config", file, "run"}, map[string]string{"YUZU_IDLE_STOP": "30s"}, "idle-stop", func(c config) string { return c.idleStop }, "30s", "env YUZU_IDLE_STOP"},
		{"flag idle-stop beats env", []string{"--config", file, "run", "--idle-stop", "0"}, map[string]string{"YUZU_IDLE_STOP": "30s"}, "idle-stop", func(c config) string { return c.idleStop }, "0", "flag"},
		{"idle-stop default", []string{"run"}, nil, "idle-stop", func(c config) string { return c.idleStop }, "", "default"},
		{"no file: defaults", []string{"run"}, nil, "server", func(c config) string { return c.server }, "", "default"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, _, err := parseArgs(c.args, env(c.env))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.value(cfg); got != c.want {
				t.Errorf("%s = %q, want %q", c.setting, got, c.want)
			}
			if got := cfg.file.sources[c.setting]; got != c.source {
				t.Errorf("source of %s = %q, want %q", c.setting, got, c.source)
			}
		})
	}
	cfg, _, err := parseArgs([]string{"--config", file, "run"}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.disabledPlugins()["firewall"] || cfg.disabledPlugins()["tags"] {
		t.Errorf("disabled = %v, want firewall only", cfg.disabledPlugins())
	}
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func TestConfigFileErrors(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"unknown key names key and line", "server: a:1\nsevrer: b:2\n", `agent.yaml:2: unknown setting "sevrer"`},
		{"underscore spelling gets a hint", "\n\nplugin_dir: /p\n", `agent.yaml:3: unknown setting "plugin_dir" (did you mean plugin-dir?)`},
		{"config cannot name a config", "config: /other.yaml\n", `agent.yaml:1: unknown setting "config"`},
		{"given twice", "server: a:1\nserver: b:2\n", "agent.yaml:2: server given twice (first on line 1)"},
		{"not a mapping", "- server\n", "agent.yaml:1: want a mapping"},
		{"a list value", "server:\n  - a\n", "agent.yaml:2: server: want a single value"},
		{"an empty value", "server:\n", "agent.yaml:1: server: no value given"},
		{"switch not a boolean", "no-tls: maybe\n", `agent.yaml:1: no-tls: "maybe": want true or false`},
		{"unknown plugin key", "plugins:\n  tags:\n    enable: false\n", `agent.yaml:3: unknown setting "plugins.tags.enable"`},
		{"unknown limit key", "plugins:\n  tags:\n    limits:\n      memory: 5\n", `agent.yaml:4: unknown setting "plugins.tags.limits.memory"`},
		{"bad limit number", "plugins:\n  tags:\n    limits: {cpus: lots}\n", `agent.yaml:3: plugins.tags.limits.cpus: "lots": want a number`},
		{"bad plugin name", "plugins:\n  ../x: {enabled: false}\n", `agent.yaml:2: plugins: "../x" is not a plugin name`},
		{"a name no plugin can have", "plugins:\n  fire-wall: {enabled: false}\n", `agent.yaml:2: plugins: "fire-wall" is not a plugin name`},
		{"bad idle stop", "plugins:\n  tags:\n    idle-stop: soon\n", `agent.yaml:3: plugins.tags.idle-stop: "soon": want a duration like 10m, or 0 for never`},
		{"negative idle stop", "plugins:\n  tags:\n    idle-stop: -1m\n", `agent.yaml:3: plugins.tags.idle-stop: "-1m"`},
		{"bad top-level idle stop is blamed on the file", "idle-stop: often\n", `--idle-stop "often"`},
		{"broken yaml", "server: [a\n", "yaml:"},
		{"bad value from the file is blamed on the file", "log-level: loud\n", `--log-level "loud": want trace, debug, info, warn or error (set by file `},
		{"limits out of range", "plugins:\n  tags:\n    limits: {memory_mib: 1}\n", "--plugin-limits"},
		{"invalid UTF-8", "server: \xff\n", "not valid UTF-8"},
		{"a second document", "server: a:1\n---\nplugins:\n  firewall: {enabled: false}\n", `agent.yaml:2: a second YAML document: the file must be one document`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeConfig(t, c.text)
			cfg, _, err := parseArgs([]string{"--config", path, "run"}, env(nil))
			var ue *usageError
			if !errors.As(err, &ue) || !strings.Contains(blame(cfg, err).Error(), c.want) {
				t.Fatalf("err = %v, want a usage error with %q", err, c.want)
			}
		})
	}
}

func TestConfigBlameNamesTheFileLine(t *testing.T) {
	path := writeConfig(t, "server: nope\n")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"--config", path, "--data-dir", t.TempDir(), "--plugin-dir", t.TempDir(), "run"}, &stdout, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), `--server "nope": want HOST:PORT (set by file `+path+`:1)`) {
		t.Errorf("exit %d, stderr:\n%s", code, stderr.String())
	}
}

func TestConfigFileIsOpenedSafely(t *testing.T) {
	good := writeConfig(t, "server: a:1\n")
	dir := t.TempDir()
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	writable := writeConfig(t, "server: a:1\n")
	if err := os.Chmod(writable, 0o666); err != nil {
		t.Fatal(err)
	}
	huge := writeConfig(t, "# "+strings.Repeat("x", 300<<10)+"\n")
	cases := map[string]struct{ path, want string }{
		"a symbolic link":     {link, "symbolic link"},
		"writable by others":  {writable, "writable"},
		"a directory":         {dir, "directory"},
		"too large":           {huge, "over the 262144-byte limit"},
		"missing, when named": {filepath.Join(dir, "absent.yaml"), "no such file"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if fi, err := os.Lstat(link); c.path == link && (err != nil || fi.Mode()&fs.ModeSymlink == 0) {
				t.Skip("os.Symlink reported success but made no link (Wine 8.0 does that)")
			}
			if c.path == writable && runtime.GOOS == "windows" {
				t.Skip("mode bits: Windows keeps others out with the file's ACL, which mode bits do not set")
			}
			_, _, err := parseArgs([]string{"--config", c.path, "run"}, env(nil))
			if c.want == "no such file" && err != nil && strings.Contains(err.Error(), "File not found") {
				return // Windows' words for it
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one mentioning %q", err, c.want)
			}
		})
	}
}

func TestConfigShow(t *testing.T) {
	path := writeConfig(t, "enrollment-token: s3cret\nserver: fleet:443\nplugins:\n  firewall: {enabled: false}\n")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"--config", path, "--heartbeat", "10s", "--tls-system-roots", "config", "show"}, &stdout, &stderr)
	out := stdout.String()
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.HasPrefix(out, "configuration file: "+path+"\n") {
		t.Errorf("config show does not name the file first:\n%s", out)
	}
	q := regexp.QuoteMeta
	for _, want := range []string{
		`enrollment-token +` + q(redacted) + ` +file ` + q(path) + `:1`,
		`server +fleet:443 +file ` + q(path) + `:2`,
		`heartbeat +10s +flag`,
		`timeout +10m0s +default`,
		`idle-stop +5m0s +default`,
		`plugins\.firewall\.enabled +false +file ` + q(path),
	} {
		if !regexp.MustCompile(`(?m)^` + want + `$`).MatchString(out) {
			t.Errorf("config show lacks a line %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "s3cret") {
		t.Errorf("config show prints the token:\n%s", out)
	}
}

// --idle-stop names plugins by the SDK's rule, like the file and --plugin-limits.
func TestIdleStopNames(t *testing.T) {
	for v, want := range map[string]string{
		"tags:1m;My_Plugin:0": "",
		"fire-wall:1m":        `"fire-wall" is not a plugin name or *`,
		"../x:1m":             `"../x" is not a plugin name or *`,
		"tags:soon":           "tags:soon",
	} {
		_, err := parseIdleStop(v)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("parseIdleStop(%q) = %v, want %q", v, err, want)
		}
	}
}

// config show says what run would refuse, and exits 1 then.
func TestConfigShowSaysRunWouldRefuse(t *testing.T) {
	path := writeConfig(t, "heartbeat: fast\ntls-system-roots: true\n")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"--config", path, "config", "show"}, &stdout, &stderr)
	if code != exitFail || !strings.Contains(stdout.String(), "problem: --heartbeat \"fast\": want a duration like 30s or a number of seconds (set by file "+path+":1)\n") {
		t.Errorf("exit %d:\n%s%s", code, stdout.String(), stderr.String())
	}
}
