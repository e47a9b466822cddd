//go:build linux

package integration

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestTestServerConsole runs yuzu-testserver as a newcomer would: it makes its
// certificates, prints the `yuzu-agent run` line, an agent started with exactly that
// line (the authority and the token) enrolls and connects over mutual TLS, and typed `send` lines (plugin and action, then a
// definition id) come back as rows; `agents` names the agent; a bad definition
// parameter is refused before anything is sent; a plugin published there is deployed
// to the agent; quit ends it with status 0.
func TestTestServerConsole(t *testing.T) {
	t.Parallel()
	w := newWorld(t, tagsBin)
	ctx, cancel := context.WithTimeout(context.Background(), 3*agentTimeout)
	defer cancel()
	pki := filepath.Join(t.TempDir(), "pki")
	srv := exec.CommandContext(ctx, binPath(testserverBin), "-listen", "127.0.0.1:0", "-dir", pki, "-plugin-dir", w.pluginDir, "-enrollment-token", "t0ken")
	srv.Env = baseEnv()
	stdin, err := srv.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	srv.Stdout, srv.Stderr = pw, pw
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	scr := newScreen(pr)
	typ := func(line string) {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}

	at := scr.waitFor(t, 0, "connect an agent with:\n  ")
	end := scr.waitFor(t, at, "\n")
	scr.mu.Lock()
	runLine := scr.buf.String()[at : end-1]
	scr.mu.Unlock()
	args := strings.Fields(runLine)
	if len(args) < 4 || args[0] != "yuzu-agent" || args[1] != "run" {
		t.Fatalf("the printed line is not a yuzu-agent run line: %q", runLine)
	}
	if strings.Contains(runLine, "t0ken") || !strings.Contains(runLine, "--enrollment-token-file "+filepath.Join(pki, "enrollment-token")) {
		t.Errorf("the run line does not give the token as a file: %q", runLine)
	}
	at = scr.waitFor(t, end, "command ids are ")
	end = scr.waitFor(t, at, "-N, a new prefix at every start\n")
	scr.mu.Lock()
	ids := scr.buf.String()[at : end-len("-N, a new prefix at every start\n")]
	scr.mu.Unlock()
	// With a token the agent needs only the authority and the token: it enrolls.
	if !strings.Contains(runLine, "--ca-cert "+filepath.Join(pki, "ca.pem")) || strings.Contains(runLine, "--client-cert") {
		t.Errorf("the run line is not an enrollment's (the CA and the token only): %q", runLine)
	}

	agent := exec.CommandContext(ctx, binPath(agentBin), append([]string{"--plugin-dir", w.pluginDir, "--data-dir", w.dataDir}, args[1:]...)...)
	agent.Env = baseEnv()
	var agentLog lockedBuffer
	agent.Stdout, agent.Stderr = &agentLog, &agentLog
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = agent.Process.Signal(syscall.SIGTERM)
		_ = agent.Wait()
		if t.Failed() {
			t.Logf("agent log:\n%s", agentLog.String())
		}
	}()

	typ("send tags set key=note value='two words'")
	at = scr.waitFor(t, at, "fleet: registered agent ")
	at = scr.waitFor(t, at, ids+"-1 RUNNING  tag_set|note|two words\n")
	at = scr.waitFor(t, at, ids+"-1 SUCCESS  exit_code=0")
	typ("send device.tags.get key=note")
	at = scr.waitFor(t, at, "-> "+ids+"-2: tags get key=note\n")
	at = scr.waitFor(t, at, ids+"-2 RUNNING  tag|note|two words\n")
	at = scr.waitFor(t, at, ids+"-2 SUCCESS  exit_code=0")
	typ("send device.tags.get nokey=1")
	at = scr.waitFor(t, at, "yuzu-testserver: device.tags.get: ")
	typ("issued")
	at = scr.waitFor(t, at, " enrollment, valid ")
	if _, err := os.Stat(filepath.Join(w.dataDir, "certs", "identity.pem")); err != nil {
		t.Errorf("the agent keeps no enrolled identity: %v", err)
	}
	typ("agents")
	at = scr.waitFor(t, at, "* ")
	at = scr.waitFor(t, at, " plugins: tags ")
	// A plugin published here and deployed to the connected agent.
	if built.root != "" {
		hello := binPath(helloBin)
		typ("publish " + hello + " 1.0.0")
		at = scr.waitFor(t, at, "published hello 1.0.0 for linux/")
		typ("deploy hello 1.0.0")
		at = scr.waitFor(t, at, "-> deploying hello 1.0.0 to 1 agents\n")
		scr.waitFor(t, at, ": SUCCESS plugin|hello|-|1.0.0|new|")
	}
	typ("quit")
	if err := srv.Wait(); err != nil {
		t.Errorf("yuzu-testserver: %v\n%s", err, scr.buf.String())
	}
	scr.mu.Lock()
	out := scr.buf.String()
	scr.mu.Unlock()
	if strings.Contains(out, ids+"-3") {
		t.Errorf("a refused definition parameter was sent anyway:\n%s", out)
	}

	// Started again with the same -dir, as docs/fleet.md suggests, it numbers with a
	// new prefix: the agent's journal holds the first run's ids.
	again := exec.CommandContext(ctx, binPath(testserverBin), "-listen", "127.0.0.1:0", "-dir", pki)
	again.Env = baseEnv()
	again.Stdin = strings.NewReader("quit\n")
	b, err := again.CombinedOutput()
	if err != nil || !strings.Contains(string(b), "command ids are cmd-") || strings.Contains(string(b), "command ids are "+ids+"-N") {
		t.Errorf("the second start (ids before: %s-N): %v\n%s", ids, err, b)
	}
}
