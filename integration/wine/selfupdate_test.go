//go:build linux

package wine

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"aead.dev/minisign"

	"github.com/yuzugo/yuzu/agent/update"
	"github.com/yuzugo/yuzu/integration/fleetserver"
)

// TestWindowsSelfUpdate: yuzu-agent.exe 0.9.0, installed as the service from its
// install tree (<root>\yuzu-agent.exe, <root>\0.9.0\, <root>\current), is offered a
// signed 1.0.0 bundle: it stages it, renames its own running .exe aside, puts 1.0.0's
// in its place, starts its watchdog (the 0.9.0 binary) and exits; the watchdog sees the
// service stop, starts it on trial, and keeps 1.0.0 once it has registered as 1.0.0.
// Not parallel: the service is the prefix's (as TestWindowsService's).
func TestWindowsSelfUpdate(t *testing.T) {
	needWine(t)
	svc := func(exe string, args ...string) run {
		t.Helper()
		return runExe(t, nil, exe, append([]string{"service"}, args...)...)
	}
	if r := svc(filepath.Join(env.bin, agentExe), "uninstall"); r.code != 0 {
		t.Fatalf("uninstall before the test: %s", r)
	}
	w := newWorld(t)
	pki, srv := startServer(t)

	// A release key the agent trusts for agent releases, and the 1.0.0 bundle.
	pub, priv, err := minisign.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pubs := filepath.Join(t.TempDir(), "publishers")
	if err := os.Mkdir(pubs, 0o755); err != nil {
		t.Fatal(err)
	}
	text, _ := pub.MarshalText()
	writeFile(t, filepath.Join(pubs, "vendor.pub"), string(text)+"\nagent: yes\nplugins:\n")
	v2, err := os.ReadFile(filepath.Join(env.bin, "yuzu-agent-1.0.0.exe"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"yuzu-agent.exe": v2}
	raw := update.MarshalIndex(update.NewIndex("1.0.0", "windows", "amd64", files, "yuzu-agent.exe"))
	var bundle bytes.Buffer
	if err := update.WriteBundle(&bundle, raw, minisign.Sign(priv, raw), files); err != nil {
		t.Fatal(err)
	}
	srv.PublishAgent(fleetserver.AgentBuild{OS: "windows", Arch: "x86_64", Version: "1.0.0", Payload: bundle.Bytes(), Share: 100})

	// The install tree at 0.9.0.
	root := filepath.Join(t.TempDir(), "agent")
	v1, err := os.ReadFile(filepath.Join(env.bin, "yuzu-agent-0.9.0.exe"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "0.9.0"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(root, "0.9.0", "yuzu-agent.exe"), filepath.Join(root, "yuzu-agent.exe")} {
		if err := os.WriteFile(p, v1, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(root, "current"), "0.9.0\n")
	conf := filepath.Join(filepath.Dir(w.pluginDir), "agent.yaml")
	writeFile(t, conf, "plugin-dir: '"+winPath(w.pluginDir)+"'\ndata-dir: '"+winPath(w.dataDir)+"'\nserver: "+srv.Addr()+
		"\nca-cert: '"+winPath(pki.CA)+"'\nclient-cert: '"+winPath(pki.ClientCert)+"'\nclient-key: '"+winPath(pki.ClientKey)+
		"'\npublishers-dir: '"+winPath(pubs)+"'\nupdate-splay: 1s\nlog-level: debug\nlog-file: '"+winPath(filepath.Join(w.dataDir, "agent.log"))+"'\n")
	agent := filepath.Join(root, "yuzu-agent.exe")
	r := runExe(t, nil, agent, "--config", winPath(conf), "service", "install")
	t.Cleanup(func() {
		if r := svc(filepath.Join(env.bin, agentExe), "uninstall"); r.code != 0 {
			t.Errorf("uninstall at the end: %s", r)
		}
	})
	if r.code != 0 {
		t.Fatalf("service install: %s", r)
	}
	logs := func() string {
		a, _ := os.ReadFile(filepath.Join(w.dataDir, "agent.log"))
		b, _ := os.ReadFile(filepath.Join(w.dataDir, "update", "watch.log"))
		return string(a) + "\n--- watch.log\n" + string(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	for {
		regs := srv.Registrations()
		if len(regs) > 0 && regs[len(regs)-1].GetInfo().GetAgentVersion() == "1.0.0" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no registration as 1.0.0:\n%s", logs())
		case <-time.After(500 * time.Millisecond):
		}
	}
	if regs := srv.Registrations(); regs[0].GetInfo().GetAgentVersion() != "0.9.0" {
		t.Errorf("the first registration was %s", regs[0].GetInfo().GetAgentVersion())
	}
	// The watchdog's last line: it has let go of the service.
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(logs(), "update watch: done") && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
	}
	l := logs()
	for _, want := range []string{"update watch: 1.0.0 starts on trial", "this version passed its trial", "update watch: 1.0.0 passed its trial", "update watch: done"} {
		if !strings.Contains(l, want) {
			t.Errorf("the logs lack %q:\n%s", want, l)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "yuzu-agent.exe.old")); err != nil {
		t.Errorf("the running 0.9.0 .exe was not renamed aside: %v", err)
	}
	if cur, _ := os.ReadFile(filepath.Join(root, "current")); strings.TrimSpace(string(cur)) != "1.0.0" {
		t.Errorf("current is %q", cur)
	}
	if got, _ := os.ReadFile(agent); !bytes.Equal(got, v2) {
		t.Error("the service's .exe is not 1.0.0's")
	}
	if st := svc(agent, "status"); !strings.Contains(st.stdout, "RUNNING") {
		t.Errorf("service status:\n%s", st)
	}
}
