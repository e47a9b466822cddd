package cli

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/agent/internal/agentconf"
	"github.com/yuzugo/yuzu/agent/internal/output"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestParseArgsFlagsInEitherPosition(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want config
		pos  []string
	}{
		{
			name: "before",
			args: []string{"--data-dir", "/d", "exec", "tags", "count"},
			want: config{dataDir: "/d", timeout: defaultTimeout, logLevel: "info", logFormat: "text", output: output.Capture},
			pos:  []string{"exec", "tags", "count"},
		},
		{
			name: "after with equals",
			args: []string{"exec", "--data-dir=/d", "tags", "count", "--timeout=30"},
			want: config{dataDir: "/d", timeout: 30 * time.Second, timeoutSet: true, logLevel: "info", logFormat: "text", output: output.Capture},
			pos:  []string{"exec", "tags", "count"},
		},
		{
			name: "env defaults, flag wins",
			args: []string{"exec", "tags", "count", "--plugin-dir", "/p"},
			env:  map[string]string{"YUZU_PLUGIN_DIR": "/env", "YUZU_AGENT_ID": "a1", "YUZU_TIMEOUT": "2m", "YUZU_LOG_FORMAT": "json"},
			want: config{pluginDir: "/p", agentID: "a1", timeout: 2 * time.Minute, timeoutSet: true, logLevel: "info", logFormat: "json", output: output.Capture},
			pos:  []string{"exec", "tags", "count"},
		},
		{
			name: "double dash ends flags",
			args: []string{"exec", "x", "y", "--", "--data-dir=v"},
			want: config{timeout: defaultTimeout, logLevel: "info", logFormat: "text", output: output.Capture},
			pos:  []string{"exec", "x", "y", "--data-dir=v"},
		},
		{
			name: "version flag",
			args: []string{"--version"},
			want: config{version: true, timeout: defaultTimeout, logLevel: "info", logFormat: "text", output: output.Capture},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, pos, err := parseArgs(c.args, env(c.env))
			if err != nil {
				t.Fatal(err)
			}
			got.file = nil // TestConfigPrecedence checks them
			if got != c.want {
				t.Errorf("config = %+v, want %+v", got, c.want)
			}
			if strings.Join(pos, " ") != strings.Join(c.pos, " ") {
				t.Errorf("positional = %q, want %q", pos, c.pos)
			}
		})
	}
}

func TestParseArgsErrors(t *testing.T) {
	cases := map[string][]string{
		"unknown flag":    {"--bogus", "exec"},
		"missing value":   {"exec", "--data-dir"},
		"bad timeout":     {"--timeout", "soon"},
		"zero timeout":    {"--timeout", "0"},
		"bad log level":   {"--log-level", "loud"},
		"bad log format":  {"--log-format", "xml"},
		"negative number": {"--timeout=-5"},
	}
	for name, args := range cases {
		_, _, err := parseArgs(args, env(nil))
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%s: err = %v, want a usage error", name, err)
		}
	}
}

func TestParseParams(t *testing.T) {
	p, err := parseParams([]string{"key=env", "value=a=b", "empty="})
	if err != nil {
		t.Fatal(err)
	}
	if p["key"] != "env" || p["value"] != "a=b" {
		t.Errorf("params = %v", p)
	}
	if v, ok := p["empty"]; !ok || v != "" {
		t.Errorf("present-but-empty parameter lost: %v", p)
	}
	for _, bad := range [][]string{{"novalue"}, {"=x"}, {"k=1", "k=2"}} {
		if _, err := parseParams(bad); err == nil {
			t.Errorf("parseParams(%q) accepted", bad)
		} else if !strings.Contains(err.Error(), strings.SplitN(bad[len(bad)-1], "=", 2)[0]) {
			t.Errorf("parseParams(%q) error %q does not name the argument", bad, err)
		}
	}
}

// Definition ids are resolved against the plugins' served definitions; that is tested
// end to end in integration. Here: how exec's arguments are read.
func TestParseTarget(t *testing.T) {
	tg, err := parseTarget([]string{"device.tags.set", "key=env", "value=prod"})
	if err != nil || tg.def == nil || tg.def.ID != "device.tags.set" || tg.plugin != "" || tg.params["key"] != "env" {
		t.Fatalf("parseTarget(definition) = %+v, %v", tg, err)
	}
	tg, err = parseTarget([]string{"tags", "set", "key=k"})
	if err != nil || tg.def != nil || tg.plugin != "tags" || tg.action != "set" || tg.params["key"] != "k" {
		t.Fatalf("parseTarget(plugin action) = %+v, %v", tg, err)
	}
	var ue *usageError
	for _, args := range [][]string{{}, {"tags"}, {"tags", "set", "novalue"}, {"tags", "set", "k=\xff"}, {"ta\xffgs", "x"}} {
		if _, err := parseTarget(args); !errors.As(err, &ue) {
			t.Errorf("parseTarget(%q): err = %v, want a usage error", args, err)
		}
	}
}

func TestContainsSegment(t *testing.T) {
	for _, c := range []struct {
		id, name string
		want     bool
	}{
		{"device.tags.set", "tags", true},
		{"security.firewall.state", "firewall", true},
		{"device.tags.set", "tag", false},
		{"workflow.config_search_and_replace", "filesystem", false},
	} {
		if got := containsSegment(c.id, c.name); got != c.want {
			t.Errorf("containsSegment(%s, %s) = %v", c.id, c.name, got)
		}
	}
}

func TestDefaultDataDir(t *testing.T) {
	cases := []struct {
		goos   string
		env    map[string]string
		system bool
		want   string
	}{
		{"linux", map[string]string{"XDG_DATA_HOME": "/x", "HOME": "/h"}, false, "/x/yuzu"},
		{"linux", map[string]string{"HOME": "/h"}, false, "/h/.local/share/yuzu"},
		{"linux", nil, false, "yuzu_data"},
		{"darwin", map[string]string{"HOME": "/Users/a"}, false, "/Users/a/Library/Application Support/yuzu"},
		{"windows", map[string]string{"LOCALAPPDATA": `C:\Users\a\AppData\Local`}, false, `C:\Users\a\AppData\Local\yuzu`},
		{"windows", nil, false, "yuzu_data"},
		// Root or a service: the machine's directory, whatever HOME says.
		{"linux", map[string]string{"XDG_DATA_HOME": "/x", "HOME": "/root"}, true, "/var/lib/yuzu"},
		{"darwin", map[string]string{"HOME": "/var/root"}, true, "/Library/Application Support/yuzu"},
		{"windows", map[string]string{"ProgramData": `D:\PD`, "LOCALAPPDATA": `C:\x`}, true, `D:\PD\yuzu`},
		{"windows", nil, true, `C:\ProgramData\yuzu`},
		{"windows", map[string]string{"ProgramData": `relative`}, true, `C:\ProgramData\yuzu`},
	}
	for _, c := range cases {
		if c.goos != "windows" && !c.system {
			// Joined with the separator of the system the test runs on.
			c.want = filepath.FromSlash(c.want)
		}
		if got := agentconf.DataDir(c.goos, env(c.env), c.system); got != c.want {
			t.Errorf("agentconf.DataDir(%s, %v) = %q, want %q", c.goos, c.env, got, c.want)
		}
	}
}

func TestExitCode(t *testing.T) {
	for rc, want := range map[int]int{0: 0, 1: 1, 255: 255, 256: 1, -1: 1} {
		if got := exitCode(rc); got != want {
			t.Errorf("exitCode(%d) = %d, want %d", rc, got, want)
		}
	}
}
