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

// fleetAgent is yuzu-agent.exe run under Wine, connected over mutual TLS to a test
// fleet server running natively on Linux loopback. Tests that send many commands use
// it: the agent and its plugins start once, where exec starts both for every command
// (two Windows processes, about 0.8 s of CPU under Wine each time).
type fleetAgent struct {
	t   *testing.T
	srv *fleetserver.Server
	ctx context.Context
	// exited is closed when the agent has exited.
	exited chan struct{}
	next   int
}

// startServer starts a test fleet server with fresh certificates, stopped at the end
// of the test.
func startServer(t *testing.T) (*fleetserver.PKI, *fleetserver.Server) {
	t.Helper()
	pki, err := fleetserver.NewPKI(filepath.Join(t.TempDir(), "pki"), "fleet")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := fleetserver.Start("127.0.0.1:0", fleetserver.Options{TLS: pki.ServerTLS()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return pki, srv
}

// startFleet starts the world's agent in run mode against a fresh fleet server and
// waits until it has registered and subscribed. With ownDataDir the agent keeps its
// state in the world's data dir; without, in its default one. The agent is killed at
// the end of the test, and its log shown if the test failed.
func (w *world) startFleet(t *testing.T, ownDataDir bool) *fleetAgent {
	t.Helper()
	pki, srv := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	args := []string{filepath.Join(env.bin, agentExe), "--plugin-dir", winPath(w.pluginDir)}
	if ownDataDir {
		args = append(args, "--data-dir", winPath(w.dataDir))
	}
	args = append(args, "run", "--server", srv.Addr(),
		"--ca-cert", winPath(pki.CA), "--client-cert", winPath(pki.ClientCert), "--client-key", winPath(pki.ClientKey))
	cmd := exec.CommandContext(ctx, wine64, args...)
	cmd.Env = wineEnv()
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f := &fleetAgent{t: t, srv: srv, ctx: ctx, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(f.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-f.exited
		if t.Failed() {
			t.Logf("agent log:\n%s", log.String())
		}
	})
	if _, err := srv.WaitAccepted(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := srv.WaitSubscribed(ctx); err != nil {
		t.Fatal(err)
	}
	return f
}

// command sends args (plugin, action, then key=value parameters) as one fleet command
// and waits for its answer.
func (f *fleetAgent) command(args ...string) fleetserver.Result {
	f.t.Helper()
	f.next++
	c := &agentv1.CommandRequest{CommandId: fmt.Sprintf("c%03d", f.next), Plugin: args[0], Action: args[1], Parameters: map[string]string{}}
	for _, p := range args[2:] {
		k, v, _ := strings.Cut(p, "=")
		c.Parameters[k] = v
	}
	ctx, cancel := context.WithTimeout(f.ctx, exeTimeout)
	defer cancel()
	r, err := f.srv.Do(ctx, c)
	if err != nil {
		f.t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return r
}

// exec sends args as one fleet command and returns its answer in exec's format: the
// rows, `[result_status] STATUS` and `[rc] N` when N is not 0. The fleet protocol does
// not carry the completeness exec prints after the status (see fleetForm).
func (f *fleetAgent) exec(args ...string) run {
	f.t.Helper()
	r := f.command(args...)
	var out strings.Builder
	for _, row := range r.Rows {
		if row != "" {
			out.WriteString(row + "\n")
		}
	}
	fmt.Fprintf(&out, "[result_status] %s\n", strings.TrimPrefix(r.Terminal.GetPluginResultStatus().String(), "PLUGIN_RESULT_"))
	code := int(r.Terminal.GetExitCode())
	if code != 0 {
		fmt.Fprintf(&out, "[rc] %d\n", code)
	}
	return run{stdout: out.String(), code: code, stderr: fmt.Sprintf("terminal response: %v", r.Terminal)}
}

// expect sends args as one fleet command and fails the test unless the answer, in
// exec's format, is want (in fleetForm) with exit code wantCode.
func (f *fleetAgent) expect(want string, wantCode int, args ...string) run {
	f.t.Helper()
	r := f.exec(args...)
	if want = fleetForm(want); r.stdout != want || r.code != wantCode {
		f.t.Errorf("fleet command %s:\n got %q exit %d\nwant %q exit %d\n%s",
			strings.Join(args, " "), r.stdout, r.code, want, wantCode, r.stderr)
	}
	return r
}

// fleetForm is an answer in exec's format without the completeness (and provenance)
// of its [result_status] line, which the fleet protocol does not carry.
func fleetForm(answer string) string {
	lines := strings.SplitAfter(answer, "\n")
	for i, l := range lines {
		if rest, ok := strings.CutPrefix(l, "[result_status] "); ok {
			status, _, _ := strings.Cut(strings.TrimSuffix(rest, "\n"), " / ")
			lines[i] = "[result_status] " + status + "\n"
		}
	}
	return strings.Join(lines, "")
}

// TestWindowsFleetRun: `yuzu-agent.exe run` under Wine against the test fleet server
// running natively on Linux loopback, over mutual TLS: it registers, answers 100
// commands, keeps its journal in the default data dir, and registers again and answers
// after the server restarts.
func TestWindowsFleetRun(t *testing.T) {
	needWine(t)
	t.Parallel()
	w := newWorld(t, tagsExe)
	// No --data-dir: the default of an elevated process, %ProgramData%\yuzu (Wine runs
	// every process elevated; an unelevated one would use %LOCALAPPDATA%\yuzu). Wine
	// keeps ProgramData at the prefix's C:\ProgramData; this test is the only one
	// using it, and starts it empty.
	local := filepath.Join(env.wineDir, "prefix", "drive_c", "ProgramData")
	if err := os.RemoveAll(filepath.Join(local, "yuzu")); err != nil {
		t.Fatal(err)
	}
	f := w.startFleet(t, false)
	srv, ctx := f.srv, f.ctx
	do := func(args ...string) fleetserver.Result {
		t.Helper()
		r := f.command(append([]string{"tags"}, args...)...)
		if r.Terminal.GetStatus() != agentv1.CommandResponse_SUCCESS {
			t.Fatalf("%v: %v %v", args, r.Terminal.GetStatus(), r.Rows)
		}
		return r
	}
	for i := range 100 {
		do("set", "key=k"+fmt.Sprint(i%10), "value=v"+fmt.Sprint(i))
	}
	if r := do("count"); len(r.Rows) != 1 || r.Rows[0] != "count|10" {
		t.Errorf("count after 100 sets: %v", r.Rows)
	}
	journal := filepath.Join(local, "yuzu", "fleet")
	if segs, _ := filepath.Glob(filepath.Join(journal, "seg-*.jsonl")); len(segs) == 0 {
		t.Errorf("no journal segment in %%ProgramData%%\\yuzu\\fleet (%s)", journal)
	}
	if _, err := os.Stat(filepath.Join(local, "yuzu", "tags.json")); err != nil {
		t.Errorf("the tags store is not in %%ProgramData%%\\yuzu: %v", err)
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
	if r := do("get", "key=k9"); len(r.Rows) != 1 || r.Rows[0] != "tag|k9|v99" {
		t.Errorf("after the restart: %v", r.Rows)
	}
	select {
	case <-f.exited:
		t.Fatal("the agent exited")
	default:
	}
}

// TestWindowsEnrollment: yuzu-agent.exe given only the server, the authority and a
// token file enrolls under Wine: it makes its key, sends a CSR with the token, keeps
// the issued certificate with its key in <data-dir>\certs\identity.pem, connects again
// presenting it and answers a command. The key file's DACL, as the agent gives it
// through the Windows API when it creates the file, lets no one but SYSTEM,
// Administrators and the agent's user read it (Wine keeps it as Unix mode bits: none
// for others), and `config check` finds nobody else can read it.
func TestWindowsEnrollment(t *testing.T) {
	needWine(t)
	t.Parallel()
	w := newWorld(t, tagsExe)
	pki, err := fleetserver.NewPKI(filepath.Join(t.TempDir(), "pki"), "fleet")
	if err != nil {
		t.Fatal(err)
	}
	iss := pki.NewIssuer(24*time.Hour, fleetserver.ApproveAuto)
	const token = "wine-enrollment-token"
	srv, err := fleetserver.Start("127.0.0.1:0", fleetserver.Options{TLS: iss.ServerTLS(), Issuer: iss, EnrollmentToken: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, wine64, filepath.Join(env.bin, agentExe), "--plugin-dir", winPath(w.pluginDir), "--data-dir", winPath(w.dataDir),
		"run", "--server", srv.Addr(), "--ca-cert", winPath(pki.CA), "--enrollment-token-file", winPath(tokenFile))
	cmd.Env = wineEnv()
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("agent log:\n%s", log.String())
		}
	})
	if err := srv.WaitSubscribed(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := srv.Do(ctx, &agentv1.CommandRequest{CommandId: "enrolled-1", Plugin: "tags", Action: "count", Parameters: map[string]string{}})
	if err != nil || r.Terminal.GetStatus() != agentv1.CommandResponse_SUCCESS {
		t.Fatalf("a command after enrolling: %v %v", r.Terminal, err)
	}
	issued := iss.Issued()
	if len(issued) != 1 || !iss.Seen(issued[0].Serial) {
		t.Fatalf("issued %+v: want one certificate, presented on the command stream", issued)
	}
	id := filepath.Join(w.dataDir, "certs", "identity.pem")
	fi, err := os.Stat(id)
	if err != nil {
		t.Fatal(err)
	}
	// Wine keeps the DACL given at creation as mode bits: SYSTEM and the user as the
	// owner's, Administrators as the group's (which it reads back as no entry), and
	// an Everyone entry would be the others' bits.
	if fi.Mode().Perm()&0o007 != 0 {
		t.Errorf("%s: mode %v: its DACL lets everyone read the key", id, fi.Mode())
	}
	if b, _ := os.ReadFile(id); !strings.Contains(string(b), "EC PRIVATE KEY") || !strings.Contains(string(b), "CERTIFICATE") {
		t.Errorf("the identity file holds no key and certificate")
	}
	check := w.agent("--ca-cert", winPath(pki.CA), "config", "check")
	if strings.Contains(check.stdout, "readable by") || !strings.Contains(check.stdout, "certificate: enrolled certificate CN=") {
		t.Errorf("config check after enrolling:\n%s", check)
	}
}
