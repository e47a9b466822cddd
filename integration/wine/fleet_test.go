//go:build linux

package wine

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/integration/fleetserver"
)

// TestWindowsFleetRun: `yuzu-agent.exe run` under Wine against the test fleet server
// running natively on Linux loopback, over mutual TLS: it registers, answers 100
// commands, keeps its journal in the default data dir under %LOCALAPPDATA%, and
// registers again and answers after the server restarts.
func TestWindowsFleetRun(t *testing.T) {
	needWine(t)
	t.Parallel()
	w := newWorld(t, tagsExe)
	pki, err := fleetserver.NewPKI(filepath.Join(t.TempDir(), "pki"), "fleet")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := fleetserver.Start("127.0.0.1:0", fleetserver.Options{TLS: pki.ServerTLS()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	// No --data-dir: the default, %LOCALAPPDATA%\yuzu. Wine sets LOCALAPPDATA itself,
	// to the prefix user's C:\users\root\AppData\Local, whatever the Unix environment
	// says; this test is the only one using it, and starts it empty.
	local := filepath.Join(env.wineDir, "prefix", "drive_c", "users", "root", "AppData", "Local")
	if err := os.RemoveAll(filepath.Join(local, "yuzu")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, wine64, filepath.Join(env.bin, agentExe),
		"--plugin-dir", winPath(w.pluginDir), "run", "--server", srv.Addr(),
		"--ca-cert", winPath(pki.CA), "--client-cert", winPath(pki.ClientCert), "--client-key", winPath(pki.ClientKey))
	cmd.Env = wineEnv()
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("agent log:\n%s", log.String())
		}
	}()
	if _, err := srv.WaitAccepted(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := srv.WaitSubscribed(ctx); err != nil {
		t.Fatal(err)
	}
	do := func(id, action string, kv ...string) fleetserver.Result {
		t.Helper()
		c := &agentv1.CommandRequest{CommandId: id, Plugin: "tags", Action: action, Parameters: map[string]string{}}
		for _, p := range kv {
			k, v, _ := strings.Cut(p, "=")
			c.Parameters[k] = v
		}
		r, err := srv.Do(ctx, c)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if r.Terminal.GetStatus() != agentv1.CommandResponse_SUCCESS {
			t.Fatalf("%s: %v %v", id, r.Terminal.GetStatus(), r.Rows)
		}
		return r
	}
	for i := range 100 {
		do(fmt.Sprintf("c%03d", i), "set", "key=k"+fmt.Sprint(i%10), "value=v"+fmt.Sprint(i))
	}
	if r := do("count", "count"); len(r.Rows) != 1 || r.Rows[0] != "count|10" {
		t.Errorf("count after 100 sets: %v", r.Rows)
	}
	journal := filepath.Join(local, "yuzu", "fleet")
	if segs, _ := filepath.Glob(filepath.Join(journal, "seg-*.jsonl")); len(segs) == 0 {
		t.Errorf("no journal segment in %%LOCALAPPDATA%%\\yuzu\\fleet (%s)", journal)
	}
	if _, err := os.Stat(filepath.Join(local, "yuzu", "tags.json")); err != nil {
		t.Errorf("the tags store is not in %%LOCALAPPDATA%%\\yuzu: %v", err)
	}

	srv.Stop()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	reg, err := srv.WaitAccepted(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := reg.GetInfo().GetScopableTags()["k3"]; got != "v93" {
		t.Errorf("the registration after the restart has k3=%q, want v93", got)
	}
	if err := srv.WaitSubscribed(ctx); err != nil {
		t.Fatal(err)
	}
	if r := do("after", "get", "key=k9"); len(r.Rows) != 1 || r.Rows[0] != "tag|k9|v99" {
		t.Errorf("after the restart: %v", r.Rows)
	}
	select {
	case err := <-done:
		t.Fatalf("the agent exited: %v", err)
	default:
	}
}
