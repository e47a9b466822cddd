package cli

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/agent/internal/identity"
)

func TestParseRunFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want func(config) bool
	}{
		{"switch alone", []string{"run", "--no-tls"}, nil, func(c config) bool { return c.noTLS && !c.tlsSystemRoots }},
		{"switch with a value", []string{"run", "--tls-system-roots=yes", "--no-tls=false"}, nil, func(c config) bool { return c.tlsSystemRoots && !c.noTLS }},
		{"switch from the environment", []string{"run"}, map[string]string{"YUZU_TLS_SYSTEM_ROOTS": "ON"}, func(c config) bool { return c.tlsSystemRoots }},
		{"flag beats environment", []string{"run", "--tls-system-roots=0"}, map[string]string{"YUZU_TLS_SYSTEM_ROOTS": "1"}, func(c config) bool { return !c.tlsSystemRoots }},
		{"values and environment", []string{"--server", "fleet:443", "run", "--heartbeat", "10"},
			map[string]string{"YUZU_ENROLLMENT_TOKEN": "tok", "YUZU_CA_CERT": "/ca.pem", "YUZU_METRICS_LISTEN": ":9100"},
			func(c config) bool {
				return c.server == "fleet:443" && c.heartbeat == "10" && c.enrollmentToken == "tok" && c.caCert == "/ca.pem" && c.metricsListen == ":9100"
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := parseArgs(c.args, env(c.env))
			if err != nil {
				t.Fatal(err)
			}
			if !c.want(got) {
				t.Errorf("config = %+v", got)
			}
		})
	}
	for _, bad := range []struct {
		args []string
		env  map[string]string
		msg  string
	}{
		{[]string{"run", "--no-tls", "--no-tls"}, nil, "given twice"},
		{[]string{"run", "--no-tls=maybe"}, nil, "want true or false"},
		{[]string{"run"}, map[string]string{"YUZU_NO_TLS": "perhaps"}, "YUZU_NO_TLS=perhaps"},
	} {
		_, _, err := parseArgs(bad.args, env(bad.env))
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("parseArgs(%q, %v) = %v, want a usage error mentioning %q", bad.args, bad.env, err, bad.msg)
		}
	}
}

func TestCheckRun(t *testing.T) {
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		cfg   config
		usage bool
		msg   string
	}{
		{"fails closed without a trust anchor", config{}, false, "TLS needs a trust anchor"},
		{"bad server", config{server: "no-port", noTLS: true}, true, "want HOST:PORT"},
		{"port out of range", config{server: "h:70000", noTLS: true}, true, "not a number from 1 to 65535"},
		{"heartbeat too short", config{heartbeat: "10ms", noTLS: true}, true, "at least 1s"},
		{"heartbeat garbage", config{heartbeat: "soon", noTLS: true}, true, "--heartbeat"},
		{"bad metrics address", config{metricsListen: "9100", noTLS: true}, true, "--metrics-listen"},
		{"no-tls with a CA", config{noTLS: true, caCert: ca}, true, "--no-tls turns TLS off"},
		{"client cert without key", config{tlsSystemRoots: true, clientCert: ca}, false, "go together"},
		{"CA without a certificate", config{caCert: ca}, false, "no PEM certificate"},
		{"missing CA file", config{caCert: ca + ".missing"}, false, "--ca-cert"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := checkRun(c.cfg)
			var ue *usageError
			if err == nil || errors.As(err, &ue) != c.usage || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("checkRun = %v (usage error %v), want one mentioning %q (usage error %v)", err, errors.As(err, &ue), c.msg, c.usage)
			}
		})
	}
	rs, err := checkRun(config{noTLS: true})
	if err != nil || rs.server != "localhost:50051" || rs.heartbeat != 30*time.Second || rs.identity != nil {
		t.Errorf("defaults: %+v, %v", rs, err)
	}
	if _, err := checkRun(config{tlsSystemRoots: true}); err != nil {
		t.Errorf("system roots: %v", err)
	}
	if _, err := checkRun(config{}); !errors.Is(err, identity.ErrNoTrustAnchor) {
		t.Errorf("without a trust anchor: %v, want ErrNoTrustAnchor", err)
	}
}

func TestParseIdleStop(t *testing.T) {
	good := []struct {
		in   string
		want map[string]time.Duration
	}{
		{"", map[string]time.Duration{"*": 5 * time.Minute}},
		{"0", map[string]time.Duration{"*": 0}},
		{"90", map[string]time.Duration{"*": 90 * time.Second}},
		{"10m", map[string]time.Duration{"*": 10 * time.Minute}},
		{"tags:0s", map[string]time.Duration{"*": 5 * time.Minute, "tags": 0}},
		{"2m;tags:10m0s;filesystem:30s", map[string]time.Duration{"*": 2 * time.Minute, "tags": 10 * time.Minute, "filesystem": 30 * time.Second}},
		{"*:1m;tags:5s;tags:6s", map[string]time.Duration{"*": time.Minute, "tags": 6 * time.Second}},
	}
	for _, c := range good {
		got, err := parseIdleStop(c.in)
		if err != nil || len(got) != len(c.want) {
			t.Errorf("parseIdleStop(%q) = %v, %v; want %v", c.in, got, err, c.want)
			continue
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("parseIdleStop(%q)[%s] = %s, want %s", c.in, k, got[k], v)
			}
		}
	}
	for _, bad := range []string{"soon", "-1m", "tags:", "../x:5m", ";", "tags:5m;", "9999h"} {
		_, err := parseIdleStop(bad)
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--idle-stop") {
			t.Errorf("parseIdleStop(%q) = %v, want a usage error naming --idle-stop", bad, err)
		}
	}
	if _, _, err := parseArgs([]string{"run", "--idle-stop", "never"}, env(nil)); err == nil || !strings.Contains(err.Error(), "--idle-stop") {
		t.Errorf("parseArgs took --idle-stop never: %v", err)
	}
	rs, err := checkRun(config{noTLS: true, idleStop: "tags:1s"})
	if err != nil || rs.idleStop["tags"] != time.Second || rs.idleStop["*"] != defaultIdleStop {
		t.Errorf("checkRun idle stop = %v, %v", rs.idleStop, err)
	}
}

func TestEnsureAgentID(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cfg := config{dataDir: dir}
	id, err := ensureAgentID(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(id) {
		t.Errorf("id %q is not a version 4 UUID", id)
	}
	fi, err := os.Stat(filepath.Join(dir, "agent_id"))
	if err != nil || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600) {
		t.Errorf("agent_id: %v, %v; want mode 0600", fi, err)
	}
	again, err := ensureAgentID(cfg)
	if err != nil || again != id {
		t.Errorf("second call = %q, %v; want the kept %q", again, err, id)
	}
	if got, _ := ensureAgentID(config{dataDir: dir, agentID: "given"}); got != "given" {
		t.Errorf("--agent-id ignored: %q", got)
	}
}
