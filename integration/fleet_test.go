//go:build linux

package integration

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/agent/fleetpb/commonv1"
	"github.com/yuzugo/yuzu/integration/fleetserver"
)

// The fleet tests run `yuzu-agent run` against the in-process test fleet server
// (integration/fleetserver) over mutual TLS with certificates made per test, and check
// what the server receives (docs/fleet.md).

var (
	timingRE = regexp.MustCompile(`^__timing__\|exec_ms=[0-9]+$`)
	uuidRE   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
)

const (
	running  = agentv1.CommandResponse_RUNNING
	success  = agentv1.CommandResponse_SUCCESS
	failure  = agentv1.CommandResponse_FAILURE
	timedOut = agentv1.CommandResponse_TIMEOUT
	rejected = agentv1.CommandResponse_REJECTED
)

// TestFleetRegister: the registration carries the agent's id (a UUID kept in the data
// dir, mode 0600, the same after a restart), host, platform, version, every plugin with
// its actions, the tags of tags.json decoded as JSON (quotes and backslashes intact)
// and the enrollment token. SIGTERM stops the agent with status 0.
func TestFleetRegister(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{EnrollmentToken: "s3cret"}, tagsBin, sleeperBin)
	tags := `{
  "env": "prod",
  "path": "C:\\Program Files\\yuzu",
  "quote": "say \"hi\"",
  "unicode": "caf\u00e9 \ud83c\udf4b"
}`
	writeFile(t, filepath.Join(f.w.dataDir, "tags.json"), tags, 0o600)
	a := f.agent("--enrollment-token", "s3cret")
	ctx := testCtx(t, 30*time.Second)
	reg, err := f.srv.WaitAccepted(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	info := reg.GetInfo()
	idFile := filepath.Join(f.w.dataDir, "agent_id")
	kept := strings.TrimSpace(readFile(t, idFile))
	if !uuidRE.MatchString(info.GetAgentId()) || info.GetAgentId() != kept {
		t.Errorf("agent id %q, kept %q: want the same random UUID", info.GetAgentId(), kept)
	}
	if fi, err := os.Stat(idFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("agent_id mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	host, _ := os.Hostname()
	release := strings.TrimSpace(readFile(t, "/proc/sys/kernel/osrelease"))
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	p := info.GetPlatform()
	if info.GetHostname() != host || p.GetOs() != "linux" || p.GetArch() != arch || p.GetVersion() != release {
		t.Errorf("host %q platform %v, want %q linux/%s/%s", info.GetHostname(), p, host, arch, release)
	}
	if !strings.HasPrefix(info.GetAgentVersion(), "0.") {
		t.Errorf("agent version %q", info.GetAgentVersion())
	}
	var plugins []string
	for _, pi := range info.GetPlugins() {
		plugins = append(plugins, pi.GetName()+" "+pi.GetVersion()+" "+strings.Join(pi.GetCapabilities(), ","))
	}
	want := []string{"sleeper 0.0.1 ok,sleep,sleep_ctx,rows,env,active,pid", "tags 0.1.0 set,get,get_all,delete,check,clear,count"}
	if !slices.Equal(plugins, want) {
		t.Errorf("plugins\n%q\nwant\n%q", plugins, want)
	}
	wantTags := map[string]string{"env": "prod", "path": `C:\Program Files\yuzu`, "quote": `say "hi"`, "unicode": "café 🍋"}
	if got := info.GetScopableTags(); !mapsEqual(got, wantTags) {
		t.Errorf("scopable_tags %q, want %q", got, wantTags)
	}
	if reg.GetEnrollmentToken() != "s3cret" {
		t.Errorf("enrollment token %q", reg.GetEnrollmentToken())
	}
	if code := a.stop(t); code != 0 {
		t.Fatalf("SIGTERM: exit %d, want 0\n%s", code, a.stderr.String())
	}
	// The same id after a restart.
	a = f.agent("--enrollment-token", "s3cret")
	reg, err = f.srv.WaitAccepted(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if reg.GetInfo().GetAgentId() != kept {
		t.Errorf("after a restart the agent id is %q, want %q", reg.GetInfo().GetAgentId(), kept)
	}
	a.stop(t)
}

// TestFleetRegisterManyTags: a device with 3,000 tags of the largest value the tags
// plugin accepts (a tags.json of about 1.4 MB, under the plugin's 16 MiB cap) registers
// with every one of them: the agent asks the tags plugin for them through the plugin
// protocol, with no bound of its own below the plugin's.
func TestFleetRegisterManyTags(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, tagsBin)
	want := map[string]string{}
	for i := range 3000 {
		want[fmt.Sprintf("tag.%04d", i)] = strings.Repeat(string(rune('a'+i%26)), 448)
	}
	data, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if len(data) <= 1<<20 {
		t.Fatalf("tags.json of %d bytes: the test needs more than 1 MiB", len(data))
	}
	writeFile(t, filepath.Join(f.w.dataDir, "tags.json"), string(data), 0o600)
	a := f.agent()
	ctx := testCtx(t, 60*time.Second)
	reg, err := f.srv.WaitAccepted(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := reg.GetInfo().GetScopableTags(); !mapsEqual(got, want) {
		t.Errorf("registered %d tags, want all %d\nagent:\n%s", len(got), len(want), a.stderr.String())
	}
	if strings.Contains(a.stderr.String(), "registering without tags") {
		t.Errorf("the agent registered without tags:\n%s", a.stderr.String())
	}
	a.stop(t)
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestFleetTLS: TLS fails closed, and the server's mutual TLS refuses an agent without
// a client certificate or that trusts another authority.
func TestFleetTLS(t *testing.T) {
	t.Parallel()
	// TLS 1.2, so that the server's verdict on the client's certificate reaches the
	// client during the handshake (TLS 1.3 sends it after, as a closed connection).
	f := newFleetTLS(t, fleetserver.Options{}, func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 }, tagsBin)
	other, err := fleetserver.NewPKI(filepath.Join(t.TempDir(), "other"), "other")
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"--plugin-dir", f.w.pluginDir, "--data-dir", f.w.dataDir, "run", "--server", f.srv.Addr()}
	t.Run("no trust anchor", func(t *testing.T) {
		t.Parallel()
		r := runAgent(t, nil, base...)
		if r.code != 1 || !strings.Contains(r.stderr, "TLS needs a trust anchor") {
			t.Errorf("want exit 1 naming the missing trust anchor; got %s", r)
		}
	})
	t.Run("no-tls with a CA is a usage error", func(t *testing.T) {
		t.Parallel()
		r := runAgent(t, nil, append(base, "--no-tls", "--ca-cert", f.pki.CA)...)
		if r.code != 2 || !strings.Contains(r.stderr, "--no-tls turns TLS off") {
			t.Errorf("want exit 2; got %s", r)
		}
	})
	refused := []struct {
		name string
		args []string
		log  string
	}{
		{"no client certificate", []string{"--ca-cert", f.pki.CA}, "authentication handshake failed: remote error: tls: handshake failure"},
		{"server signed by another authority", []string{"--ca-cert", other.CA, "--client-cert", f.pki.ClientCert, "--client-key", f.pki.ClientKey}, "certificate signed by unknown authority"},
		{"client signed by another authority", []string{"--ca-cert", f.pki.CA, "--client-cert", other.ClientCert, "--client-key", other.ClientKey}, "authentication handshake failed: remote error: tls: handshake failure"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			a := startAgentProc(t, append([]string{"--plugin-dir", f.w.pluginDir, "--data-dir", dir, "run", "--server", f.srv.Addr()}, c.args...)...)
			waitFor(t, 20*time.Second, "a failed connection in the agent's log", func() bool {
				return strings.Contains(a.stderr.String(), "fleet connection lost")
			})
			if !strings.Contains(a.stderr.String(), c.log) {
				t.Errorf("the agent's log does not say %q:\n%s", c.log, a.stderr.String())
			}
			if code := a.stop(t); code != 0 {
				t.Errorf("SIGTERM while reconnecting: exit %d", code)
			}
		})
	}
	t.Cleanup(func() {
		if n := len(f.srv.Registrations()); n != 0 {
			t.Errorf("%d registrations reached the server through refused TLS", n)
		}
	})
}

// TestFleetEnrollment: a wrong token stops the agent for good with a clear message; a
// pending enrollment is retried until accepted.
func TestFleetEnrollment(t *testing.T) {
	t.Parallel()
	t.Run("wrong token", func(t *testing.T) {
		t.Parallel()
		f := newFleet(t, fleetserver.Options{EnrollmentToken: "right"}, tagsBin)
		a := startAgentProc(t, f.args("--enrollment-token", "wrong")...)
		if code := a.wait(t, 30*time.Second); code != 1 {
			t.Errorf("exit %d, want 1", code)
		}
		if msg := "the fleet server refused the registration: invalid enrollment token"; !strings.Contains(a.stderr.String(), msg) {
			t.Errorf("stderr does not say %q:\n%s", msg, a.stderr.String())
		}
		if n := len(f.srv.Registrations()); n != 1 {
			t.Errorf("%d registrations, want 1 (no retry after a refusal)", n)
		}
	})
	t.Run("pending", func(t *testing.T) {
		t.Parallel()
		f := newFleet(t, fleetserver.Options{Pending: 2}, tagsBin)
		a := startAgentProc(t, f.args()...)
		if _, err := f.srv.WaitAccepted(testCtx(t, 30*time.Second), 1); err != nil {
			t.Fatal(err)
		}
		if n := len(f.srv.Registrations()); n != 3 {
			t.Errorf("%d registrations, want 2 pending and 1 accepted", n)
		}
		if !strings.Contains(a.stderr.String(), "enrollment pending") {
			t.Errorf("the log does not mention the pending enrollment:\n%s", a.stderr.String())
		}
		a.stop(t)
	})
}

// TestFleetCommands: every kind of answer, on one agent, commands in parallel. The
// deadline is generous so that a loaded machine makes them slow, not failed; do checks
// that each is answered within it plus the agent's promised grace. Each subtest has
// its own context: a parallel subtest may wait long for a free slot (-parallel counts
// every test of the binary), and a context shared from the parent could expire before
// its command is even sent.
func TestFleetCommands(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, tagsBin, sleeperBin, crasherBin)
	a := f.agent("--timeout", "20")
	past := time.Now().Add(-time.Minute)

	t.Run("group", func(t *testing.T) {
		t.Run("success", func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t, 60*time.Second)
			r := f.do(t, ctx, command("set-1", "tags", "set", "key=env", "value=prod"))
			expectResult(t, r, success, 0, "tag_set|env|prod")
			if s := r.Terminal.GetPluginResultStatus(); s != agentv1.CommandResponse_PLUGIN_RESULT_UNDECLARED {
				t.Errorf("plugin_result_status %v", s)
			}
		})
		t.Run("plugin failure", func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t, 60*time.Second)
			expectResult(t, f.do(t, ctx, command("bad-key", "tags", "set", "key=bad key")), failure, 1, "error|invalid key: bad key")
		})
		t.Run("unknown plugin", func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t, 60*time.Second)
			expectRejected(t, f.do(t, ctx, command("nope", "no-such\x1b[31m", "x")), `plugin not found: no-such\x1b[31m`)
		})
		t.Run("unknown action", func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t, 60*time.Second)
			r := f.do(t, ctx, command("what", "tags", "what"))
			if r.Terminal.GetStatus() != failure || len(r.Rows) != 1 || !strings.Contains(r.Rows[0], "unknown action: what") {
				t.Errorf("unknown action: %+v", r)
			}
		})
		t.Run("control bytes escaped", func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t, 60*time.Second)
			// The tags plugin echoes an unknown action: ESC and BEL reach the
			// server as exec prints them, never raw.
			r := f.do(t, ctx, command("esc", "tags", "what\x1b[31m\x07"))
			if len(r.Rows) != 1 || !strings.Contains(r.Rows[0], `unknown action: what\x1b[31m\x07`) || strings.ContainsAny(r.Rows[0], "\x1b\x07") {
				t.Errorf("rows %q, want the action echoed with its control bytes escaped", r.Rows)
			}
			if msg := r.Terminal.GetError().GetMessage(); strings.ContainsAny(msg, "\x1b\x07") {
				t.Errorf("error message %q holds raw control bytes", msg)
			}
		})
		t.Run("rows in messages of at most 64 KiB", func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t, 60*time.Second)
			r := f.do(t, ctx, command("rows", "sleeper", "rows", "n=5000"))
			if len(r.Rows) != 5000 || r.Rows[0] != "row|0|abcdefghijklmnopqrstuvwxyz" || r.Rows[4999] != "row|4999|abcdefghijklmnopqrstuvwxyz" {
				t.Fatalf("%d rows, first %q", len(r.Rows), r.Rows[:1])
			}
			if r.Messages < 2 {
				t.Errorf("%d messages for %d bytes of rows", r.Messages, len(strings.Join(r.Rows, "\n")))
			}
			for _, m := range f.srv.Responses("rows") {
				if len(m.GetOutput()) > 64<<10 {
					t.Errorf("a RUNNING message of %d bytes", len(m.GetOutput()))
				}
			}
		})
		t.Run("crash", func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t, 60*time.Second)
			r := f.do(t, ctx, command("crash", "crasher", "crash"))
			expectResult(t, r, failure, 1, "before|crash", "error|plugin crashed: crasher exited during the command (exit status 3)")
			if r.Terminal.GetError().GetCode() != "plugin_crashed" {
				t.Errorf("error detail %v", r.Terminal.GetError())
			}
		})
		t.Run("expired", func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t, 60*time.Second)
			c := command("expired", "tags", "set", "key=expired", "value=1")
			c.ExpiresAt = millis(past)
			expectRejected(t, f.do(t, ctx, c), "command expired")
		})
		t.Run("expires during its delay", func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t, 60*time.Second)
			c := command("expires-later", "tags", "set", "key=expired", "value=2")
			c.DelaySeconds = 40
			c.ExpiresAt = millis(time.Now().Add(300 * time.Millisecond))
			start := time.Now()
			expectRejected(t, f.do(t, ctx, c), "command expired")
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("answered after %s: an expiring command should be answered when it expires", d)
			}
		})
		t.Run("delay", func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t, 60*time.Second)
			c := command("delayed", "tags", "count")
			c.DelaySeconds = 1
			c.ExpiresAt = millis(time.Now().Add(time.Minute))
			start := time.Now()
			r := f.do(t, ctx, c)
			if d := time.Since(start); d < time.Second {
				t.Errorf("a 1 s delay answered after %s", d)
			}
			if r.Terminal.GetStatus() != success {
				t.Errorf("%+v", r)
			}
		})
		t.Run("duplicate in flight, then replayed", func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t, 60*time.Second)
			c := command("dup", "sleeper", "sleep_ctx", "seconds=0.5")
			if err := f.srv.Send(ctx, c); err != nil {
				t.Fatal(err)
			}
			if err := f.srv.Send(ctx, c); err != nil {
				t.Fatal(err)
			}
			r, err := f.srv.WaitTerminal(ctx, "dup")
			if err != nil {
				t.Fatal(err)
			}
			// The in-flight answer is a RUNNING message, so the server shows it among
			// the rows (as upstream's does).
			expectResult(t, r, success, 0, "duplicate command still in flight", "slept|500ms")
			var inFlight int
			for _, m := range f.srv.Responses("dup") {
				if m.GetStatus() == running && m.GetOutput() == "duplicate command still in flight" {
					inFlight++
				}
			}
			if inFlight != 1 {
				t.Errorf("%d 'still in flight' answers, want 1", inFlight)
			}
			first := r.Terminal
			if err := f.srv.Send(ctx, c); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 10*time.Second, "the replay", func() bool { return f.srv.Result("dup").Terminals == 2 })
			all := f.srv.Responses("dup")
			replay := all[len(all)-1]
			if replay.GetStatus() != success || replay.GetExitCode() != 0 || replay.GetSentAt().GetMillisEpoch() < first.GetSentAt().GetMillisEpoch() {
				t.Errorf("replay %v, first %v", replay, first)
			}
			if rows := f.srv.Result("dup").Rows; len(rows) != 2 {
				t.Errorf("the replay ran the command again: rows %q", rows)
			}
		})
		t.Run("empty id", func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t, 60*time.Second)
			if err := f.srv.Send(ctx, command("", "tags", "count")); err != nil {
				t.Fatal(err)
			}
			r, err := f.srv.WaitTerminal(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			expectRejected(t, r, "invalid command: empty command_id")
		})
		t.Run("panic", func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t, 60*time.Second)
			expectResult(t, f.do(t, ctx, command("panic", "crasher", "panic")), failure, 1, "error|plugin panicked in panic: crasher was asked to panic")
		})
	})
	if !a.running() {
		t.Fatal("the agent died")
	}
	// The expired commands never ran.
	r := f.do(t, testCtx(t, 30*time.Second), command("check-expired", "tags", "check", "key=expired"))
	expectResult(t, r, success, 0, "tag_exists|expired|false")
}

// TestFleetTimeout: a plugin that hangs past the deadline is killed and the command
// answered TIMEOUT within the deadline plus the grace the agent promises; the plugin
// is restarted and serves the next command.
func TestFleetTimeout(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, sleeperBin)
	f.agent("--timeout", "1")
	ctx := testCtx(t, 60*time.Second)
	r := f.do(t, ctx, command("hang", "sleeper", "sleep", "seconds=60"))
	expectResult(t, r, timedOut, 1, "error|plugin timed out after 1s")
	if code := r.Terminal.GetError().GetCode(); code != "plugin_timeout" {
		t.Errorf("error code %q, want plugin_timeout", code)
	}
	// The restarted plugin may take longer than 1 s to be ready on a loaded machine:
	// then the answer is an honest TIMEOUT that names the wait, never silence. Or the
	// command may still meet the old child, and its kill.
	r = f.do(t, ctx, command("next", "sleeper", "ok"))
	switch code := r.Terminal.GetError().GetCode(); {
	case r.Terminal.GetStatus() == success:
		expectResult(t, r, success, 0, "ok|sleeper")
	case code == "command_timeout" && len(r.Rows) == 1 && strings.HasPrefix(r.Rows[0], "error|command timed out after 1s waiting for plugin sleeper to start ("):
		t.Logf("the restarted plugin was not ready within 1 s: %s", r.Rows[0])
	case code == "plugin_crashed" && len(r.Rows) == 1 && r.Rows[0] == "error|plugin crashed: stopped after another command timed out":
		// Sent while the hung command's 5 s kill grace ran, it reached the old child,
		// which the kill then ended: slow enough a machine (load 40) leaves "ok" in
		// flight at that moment. The answer names why.
		t.Logf("the command met the old plugin's kill: %s", r.Rows[0])
	default:
		t.Errorf("after the restart: %+v", r)
	}
}

// TestFleetTypedStatus: the plugin's typed status reaches the server as
// plugin_result_status: a tags.json with a number in it is corrupt, so the tags plugin
// answers CONSTRAINED (tags:load_failed), and the agent registers without tags rather
// than with a mangled value (the plugin, asked for the tags at registration, has moved
// the file aside and answers CONSTRAINED).
func TestFleetTypedStatus(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, tagsBin)
	writeFile(t, filepath.Join(f.w.dataDir, "tags.json"), `{"a": 1}`, 0o600)
	// With lazy start the child that finds the corrupt file is the one run starts to
	// learn the manifest, and it stops at once; the command's child must still tell
	// (plugin-tags carries the state across processes, docs/tags.md).
	a := f.agent()
	ctx := testCtx(t, 30*time.Second)
	r := f.do(t, ctx, command("constrained", "tags", "count"))
	expectResult(t, r, success, 0, "count|0")
	if s := r.Terminal.GetPluginResultStatus(); s != agentv1.CommandResponse_PLUGIN_RESULT_CONSTRAINED {
		t.Errorf("plugin_result_status %v, want CONSTRAINED", s)
	}
	reg := f.srv.Registrations()[0]
	if n := len(reg.GetInfo().GetScopableTags()); n != 0 {
		t.Errorf("%d tags registered from a corrupt tags.json", n)
	}
	a.stop(t)
	// The audit trail: the command's one line at info, with its outcome.
	audit := regexp.MustCompile(`\[INFO\]  yuzu-agent\.fleet: command: id=constrained plugin=tags action=count params="?"? status=CONSTRAINED completeness=\S+ rc=0 duration=\S+s\n`)
	if n := len(audit.FindAllString(a.stderr.String(), -1)); n != 1 {
		t.Errorf("want one audit line for the command, got %d:\n%s", n, a.stderr.String())
	}
}

// TestFleetReplayAfterRestart: a repeated command id is answered from the journal
// after the agent restarted, without running again.
func TestFleetReplayAfterRestart(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, tagsBin)
	ctx := testCtx(t, 60*time.Second)
	a := f.agent()
	first := f.do(t, ctx, command("x", "tags", "set", "key=k", "value=v1"))
	expectResult(t, first, success, 0, "tag_set|k|v1")
	if code := a.stop(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
	a = f.agent()
	expectResult(t, f.do(t, ctx, command("y", "tags", "set", "key=k", "value=v2")), success, 0, "tag_set|k|v2")
	if err := f.srv.Send(ctx, command("x", "tags", "set", "key=k", "value=v1")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the replay of x", func() bool { return f.srv.Result("x").Terminals == 2 })
	all := f.srv.Responses("x")
	replay := all[len(all)-1]
	orig := proto.CloneOf(first.Terminal)
	orig.SentAt, replay.SentAt = nil, nil
	if !proto.Equal(orig, replay) {
		t.Errorf("replay %v\nwant %v", replay, orig)
	}
	expectResult(t, f.do(t, ctx, command("z", "tags", "get", "key=k")), success, 0, "tag|k|v2")
	a.stop(t)
}

// TestFleetAgentKilled: an agent killed (SIGKILL) in the middle of a command answers
// it after its restart as interrupted, FAILURE, and does not run it again when the
// server repeats it; a command that was still waiting for its delay is answered
// REJECTED as never started (a repeat would run it).
func TestFleetAgentKilled(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, sleeperBin)
	a := f.agent()
	ctx := testCtx(t, 60*time.Second)
	started := startMarker(t)
	c := command("interrupted", "sleeper", "sleep_ctx", "seconds=30", "started="+started)
	if err := f.srv.Send(ctx, c); err != nil {
		t.Fatal(err)
	}
	// And one still waiting for its delay: it never ran, and is told apart.
	waiting := command("waiting", "sleeper", "ok")
	waiting.DelaySeconds = 120
	if err := f.srv.Send(ctx, waiting); err != nil {
		t.Fatal(err)
	}
	waitStarted(t, started)
	waitFor(t, 20*time.Second, "the journal's accept record of the waiting command", func() bool {
		segs, _ := filepath.Glob(filepath.Join(f.w.dataDir, "fleet", "seg-*.jsonl"))
		for _, seg := range segs {
			if b, err := os.ReadFile(seg); err == nil && strings.Contains(string(b), `"op":"accept","id":"waiting"`) {
				return true
			}
		}
		return false
	})
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.wait(t, 10*time.Second)
	a = f.agent()
	r, err := f.srv.WaitTerminal(ctx, "interrupted")
	if err != nil {
		t.Fatal(err)
	}
	const msg = "command interrupted: the agent stopped before it finished; it was not run again"
	if r.Terminal.GetStatus() != failure || r.Terminal.GetError().GetCode() != "command_interrupted" || !slices.Equal(r.Rows, []string{"error|" + msg}) {
		t.Errorf("after the restart: %+v", r)
	}
	r, err = f.srv.WaitTerminal(ctx, "waiting")
	if err != nil {
		t.Fatal(err)
	}
	expectRejected(t, r, "agent restarted before the command started; it did not run")
	if err := f.srv.Send(ctx, c); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the replay", func() bool { return f.srv.Result("interrupted").Terminals == 2 })
	all := f.srv.Responses("interrupted")
	if last := all[len(all)-1]; last.GetStatus() != failure || last.GetError().GetCode() != "command_interrupted" {
		t.Errorf("the repeat was not answered from the journal: %v", last)
	}
	a.stop(t)
}

// TestFleetDamagedJournal: three finished commands whose journal records root then
// damages (a changed byte, a line cut out, a line zeroed). The journal was compacted
// by restarts first, so their start records are gone. Damaged in the newest segment
// only, the generation a compaction keeps before it still holds the answers, and the
// repeats get them; damaged in every copy, the repeats are answered FAILURE
// outcome_unknown. Either way nothing runs again: before, the agent forgot all three
// ids and ran each repeat again (3 of 3), setting its tag back.
func TestFleetDamagedJournal(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, tagsBin)
	ctx := testCtx(t, 90*time.Second)
	a := f.agent()
	ids := []string{"changed", "cut", "zeroed"}
	for _, id := range ids {
		expectResult(t, f.do(t, ctx, command(id, "tags", "set", "key="+id, "value=first")), success, 0, "tag_set|"+id+"|first")
	}
	for _, id := range ids {
		expectResult(t, f.do(t, ctx, command(id+"-later", "tags", "set", "key="+id, "value=later")), success, 0, "tag_set|"+id+"|later")
	}
	if code := a.stop(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
	// A restart compacts the journal into one segment, which keeps no start records;
	// a compaction keeps the generation before it (here the first one: every segment
	// the agent wrote before), so a second restart leaves the two compacted segments.
	// The newest is the one replay reads.
	for range 2 {
		a = f.agent()
		if code := a.stop(t); code != 0 {
			t.Fatalf("exit %d", code)
		}
	}
	segs, _ := filepath.Glob(filepath.Join(f.w.dataDir, "fleet", "seg-*.jsonl"))
	if len(segs) != 2 {
		t.Fatalf("%d journal segments after two restarts, want 2 (the compacted one and the generation before)", len(segs))
	}
	// damage harms the three answers in one segment, as root could, and says how many
	// it found there.
	damage := func(seg string) int {
		t.Helper()
		lines := strings.SplitAfter(readFile(t, seg), "\n")
		damaged := 0
		for i, line := range lines {
			switch {
			case strings.Contains(line, `"op":"done","id":"changed"`):
				at := strings.Index(line, `"resp":"`) + len(`"resp":"`) + 4
				lines[i] = line[:at] + string(line[at]^0x01) + line[at+1:]
			case strings.Contains(line, `"op":"done","id":"cut"`):
				lines[i] = ""
			case strings.Contains(line, `"op":"done","id":"zeroed"`):
				lines[i] = strings.Repeat("\x00", len(line))
			default:
				continue
			}
			damaged++
		}
		writeFile(t, seg, strings.Join(lines, ""), 0o600)
		return damaged
	}
	// repeat sends the three ids again and returns each last answer and the row
	// before it.
	repeat := func(round int) map[string][2]*agentv1.CommandResponse {
		out := map[string][2]*agentv1.CommandResponse{}
		for _, id := range ids {
			if err := f.srv.Send(ctx, command(id, "tags", "set", "key="+id, "value=first")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 20*time.Second, "the answer to the repeat of "+id, func() bool { return f.srv.Result(id).Terminals == 1+round })
			all := f.srv.Responses(id)
			out[id] = [2]*agentv1.CommandResponse{all[len(all)-2], all[len(all)-1]}
		}
		return out
	}

	// The newest segment damaged: the generation before holds the same answers, and
	// the repeats get them, as first sent. Nothing runs again.
	if n := damage(segs[1]); n != len(ids) {
		t.Fatalf("found %d of the %d answers to damage in the newest segment", n, len(ids))
	}
	a = f.agent()
	for id, got := range repeat(1) {
		if got[1].GetStatus() != success || got[1].GetError() != nil {
			t.Errorf("repeat of %s with the generation before whole: %v", id, got[1])
		}
	}
	for _, id := range ids {
		expectResult(t, f.do(t, ctx, command(id+"-get1", "tags", "get", "key="+id)), success, 0, "tag|"+id+"|later")
	}
	if log := a.stderr.String(); !strings.Contains(log, "damaged") {
		t.Errorf("the agent's log does not report the damage:\n%s", log)
	}
	if code := a.stop(t); code != 0 {
		t.Fatalf("exit %d", code)
	}

	// Every copy damaged: the answers are unknown, and said so.
	segs, _ = filepath.Glob(filepath.Join(f.w.dataDir, "fleet", "seg-*.jsonl"))
	copies := 0
	for _, seg := range segs {
		copies += damage(seg)
	}
	if copies < 2*len(ids) {
		t.Fatalf("found %d copies of the %d answers to damage in %d segments, want two of each at least", copies, len(ids), len(segs))
	}
	a = f.agent()
	const msg = "command outcome unknown: the agent's journal record of it was damaged; it was not run again"
	for id, got := range repeat(2) {
		if got[1].GetStatus() != failure || got[1].GetExitCode() != 1 || got[1].GetError().GetCode() != "outcome_unknown" {
			t.Errorf("repeat of %s answered %v", id, got[1])
		}
		if got[0].GetStatus() != running || got[0].GetOutput() != "error|"+msg {
			t.Errorf("repeat of %s: row %v, want the error row", id, got[0])
		}
	}
	for _, id := range ids {
		expectResult(t, f.do(t, ctx, command(id+"-get", "tags", "get", "key="+id)), success, 0, "tag|"+id+"|later")
	}
	if log := a.stderr.String(); !strings.Contains(log, "unknown outcome") {
		t.Errorf("the agent's log does not report the damage:\n%s", log)
	}
	a.stop(t)
}

// TestFleetQueueOverflow: with every slot busy, 1,000 commands wait and the rest are
// answered REJECTED at once; none is lost.
func TestFleetQueueOverflow(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, sleeperBin)
	a := f.agent()
	// A thousand commands through four slots: on a loaded two-core machine (load 40)
	// that took over a minute. The agent's promise is an answer within each command's
	// deadline (600 s here), so the wait is bounded well inside it, not by a guess.
	ctx := testCtx(t, 300*time.Second)
	slots := max(4, runtime.NumCPU())
	var markers []string
	for i := range slots {
		// Long enough that no slot frees while the queue is filled on a loaded machine.
		m := startMarker(t)
		markers = append(markers, m)
		if err := f.srv.Send(ctx, command(fmt.Sprint("busy-", i), "sleeper", "sleep_ctx", "seconds=8", "started="+m)); err != nil {
			t.Fatal(err)
		}
	}
	waitStarted(t, markers...) // the slots are taken
	const extra = 7
	var ids []string
	for i := range 1000 + extra {
		id := fmt.Sprint("q-", i)
		ids = append(ids, id)
		if err := f.srv.Send(ctx, command(id, "sleeper", "ok")); err != nil {
			t.Fatal(err)
		}
	}
	counts := map[agentv1.CommandResponse_Status]int{}
	for _, id := range ids {
		r, err := f.srv.WaitTerminal(ctx, id)
		if err != nil {
			t.Fatalf("%v\n%s", err, a.goroutines())
		}
		counts[r.Terminal.GetStatus()]++
		if r.Terminal.GetStatus() == rejected && r.Terminal.GetOutput() != "agent overloaded: command queue full" {
			t.Errorf("rejected with %q", r.Terminal.GetOutput())
		}
		if r.Terminals != 1 {
			t.Errorf("%s: %d terminal responses", id, r.Terminals)
		}
	}
	if counts[rejected] != extra || counts[success] != 1000 {
		t.Errorf("answers %v, want %d rejected and 1000 successes", counts, extra)
	}
	a.stop(t)
}

// TestFleetServerRestart: the server dies in the middle of a command and comes back;
// the agent reconnects (registering again, with the tags set meanwhile) and the
// command's rows and terminal answer arrive, the terminal exactly once.
func TestFleetServerRestart(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, tagsBin, sleeperBin)
	a := f.agent()
	ctx := testCtx(t, 60*time.Second)
	expectResult(t, f.do(t, ctx, command("tag", "tags", "set", "key=site", "value=lab")), success, 0, "tag_set|site|lab")
	started := startMarker(t)
	if err := f.srv.Send(ctx, command("long", "sleeper", "sleep_ctx", "seconds=1.5", "started="+started)); err != nil {
		t.Fatal(err)
	}
	waitStarted(t, started)
	f.srv.Stop()
	time.Sleep(1500 * time.Millisecond) // the command ends while the server is away
	if err := f.srv.Restart(); err != nil {
		t.Fatal(err)
	}
	reg, err := f.srv.WaitAccepted(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := reg.GetInfo().GetScopableTags()["site"]; got != "lab" {
		t.Errorf("the new registration has site=%q, want the tag set before", got)
	}
	if _, err := f.srv.WaitTerminal(ctx, "long"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // room for a duplicate to show up
	expectResult(t, f.srv.Result("long"), success, 0, "slept|1.5s")
	a.stop(t)
}

// TestFleetPluginKilled: a plugin SIGKILLed in the middle of a command ends that
// command FAILURE with the crash; the plugin is restarted and answers again.
func TestFleetPluginKilled(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, sleeperBin)
	a := f.agent()
	ctx := testCtx(t, 60*time.Second)
	r := f.do(t, ctx, command("pid", "sleeper", "pid"))
	fields := strings.Split(r.Rows[0], "|")
	pid, err := strconv.Atoi(fields[1])
	if err != nil {
		t.Fatal(r.Rows)
	}
	started := startMarker(t)
	if err := f.srv.Send(ctx, command("victim", "sleeper", "sleep_ctx", "seconds=30", "started="+started)); err != nil {
		t.Fatal(err)
	}
	waitStarted(t, started)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r, err = f.srv.WaitTerminal(ctx, "victim")
	if err != nil {
		t.Fatal(err)
	}
	expectResult(t, r, failure, 1, "error|plugin crashed: sleeper exited during the command (killed by signal 9 (killed))")
	expectResult(t, f.do(t, ctx, command("after", "sleeper", "ok")), success, 0, "ok|sleeper")
	a.stop(t)
}

// TestFleetGracefulStop: SIGTERM with commands in flight cancels them, sends every
// answer, stops the plugins and exits 0.
func TestFleetGracefulStop(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, sleeperBin)
	a := f.agent()
	ctx := testCtx(t, 60*time.Second)
	r := f.do(t, ctx, command("pid", "sleeper", "pid"))
	pid, _ := strconv.Atoi(strings.Split(r.Rows[0], "|")[1])
	// The delayed command goes first: once the two after it run, the agent has it too.
	waiting := command("waiting", "sleeper", "ok")
	waiting.DelaySeconds = 120
	if err := f.srv.Send(ctx, waiting); err != nil {
		t.Fatal(err)
	}
	ids := []string{"c1", "c2"}
	var markers []string
	for _, id := range ids {
		m := startMarker(t)
		markers = append(markers, m)
		if err := f.srv.Send(ctx, command(id, "sleeper", "sleep_ctx", "seconds=60", "started="+m)); err != nil {
			t.Fatal(err)
		}
	}
	waitStarted(t, markers...)
	start := time.Now()
	if code := a.stop(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
	// The sleeps have 60 s to go: a stop well before that cancelled them.
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("stopping took %s", d)
	}
	// The plugin's own answer to the cancellation, then the agent's.
	for _, id := range ids {
		expectResult(t, f.srv.Result(id), failure, 1, "error|cancelled: context canceled", "error|command cancelled: the agent is stopping")
	}
	expectRejected(t, f.srv.Result("waiting"), "agent is shutting down")
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("the plugin (pid %d) outlived the agent", pid)
	}
}

// TestFleetHostileServer: malformed and hostile commands get clear answers; the agent
// neither crashes nor grows without bound, and still works afterwards.
func TestFleetHostileServer(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, tagsBin)
	a := f.agent()
	ctx := testCtx(t, 60*time.Second)

	many := command("many-params", "tags", "count")
	for i := range 100000 {
		many.Parameters[strconv.Itoa(i)] = "v"
	}
	expectRejected(t, f.do(t, ctx, many), "invalid command: 100000 parameters, at most 1024")
	big := command("big-param", "tags", "set", "key=k")
	big.Parameters["value"] = strings.Repeat("x", 9<<20)
	expectRejected(t, f.do(t, ctx, big), fmt.Sprintf("invalid command: parameters of %d bytes, at most 8388608", 3+1+5+9<<20))
	expectRejected(t, f.do(t, ctx, command("odd", "../../bin/sh\x00\x7f"+strings.Repeat("é", 200), "x")),
		`plugin not found: ../../bin/sh\x00\x7f`+strings.Repeat("é", 57)+"...")
	longID := strings.Repeat("i", 300)
	expectRejected(t, f.do(t, ctx, command(longID, "tags", "count")), "invalid command: command_id of 300 bytes, at most 256")
	expectRejected(t, f.do(t, ctx, command("no-action", "tags", "")), "invalid command: empty action")
	neg := command("negative-stagger", "tags", "count")
	neg.StaggerSeconds, neg.DelaySeconds = -1000, -5
	neg.ExpiresAt = &commonv1.Timestamp{MillisEpoch: -5} // no expiry
	expectResult(t, f.do(t, ctx, neg), success, 0, "count|0")
	huge := command("huge-delay", "tags", "count")
	huge.DelaySeconds, huge.StaggerSeconds = 1<<31-1, 1<<31-1
	huge.ExpiresAt = millis(time.Now().Add(300 * time.Millisecond))
	expectRejected(t, f.do(t, ctx, huge), "command expired")

	// A flood of waiting commands: at most 1,000 wait, the rest are refused.
	for i := range 1500 {
		c := command(fmt.Sprint("flood-", i), "tags", "count")
		c.DelaySeconds = 1 << 30
		if err := f.srv.Send(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, "500 refusals", func() bool {
		n := 0
		for i := range 1500 {
			if f.srv.Result(fmt.Sprint("flood-", i)).Terminal != nil {
				n++
			}
		}
		return n == 500
	})
	// A message over the agent's 16 MiB limit breaks that stream; the agent
	// reconnects.
	huge2 := command("too-big", "tags", "set", "key=k")
	huge2.Parameters["value"] = strings.Repeat("y", 17<<20)
	if err := f.srv.Send(ctx, huge2); err != nil {
		t.Fatal(err)
	}
	if _, err := f.srv.WaitAccepted(ctx, 2); err != nil {
		t.Fatal(err)
	}
	expectResult(t, f.do(t, ctx, command("still-fine", "tags", "count")), success, 0, "count|0")
	if rss := a.rss(t); rss > 128<<20 {
		t.Errorf("agent RSS %d MiB after the hostile input", rss>>20)
	}
	if code := a.stop(t); code != 0 {
		t.Errorf("exit %d", code)
	}
	// The waiting ones were answered at the stop.
	n := 0
	for i := range 1500 {
		if t := f.srv.Result(fmt.Sprint("flood-", i)).Terminal; t != nil && t.GetStatus() == rejected {
			n++
		}
	}
	if n != 1500 {
		t.Errorf("%d of 1500 flood commands answered REJECTED, want all", n)
	}
}

// TestFleetHeartbeatAndMetrics: heartbeats carry the status tags; the Prometheus
// endpoint counts commands, restarts, the queue and reconnects.
func TestFleetHeartbeatAndMetrics(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, tagsBin, crasherBin)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	a := f.agent("--heartbeat", "1", "--metrics-listen", addr)
	ctx := testCtx(t, 30*time.Second)
	expectResult(t, f.do(t, ctx, command("count", "tags", "count")), success, 0, "count|0")
	expectResult(t, f.do(t, ctx, command("crash", "crasher", "crash")), failure, 1, "before|crash", "error|plugin crashed: crasher exited during the command (exit status 3)")
	if err := f.srv.WaitHeartbeats(ctx, 2); err != nil {
		t.Fatal(err)
	}
	hb := f.srv.Heartbeats()
	tags := hb[len(hb)-1].GetStatusTags()
	for _, k := range []string{"yuzu.uptime_s", "yuzu.commands_executed", "yuzu.plugins_loaded", "yuzu.agent_version"} {
		if tags[k] == "" {
			t.Errorf("heartbeat without %s: %v", k, tags)
		}
	}
	if tags["yuzu.os"] != "linux" || tags["yuzu.healthy"] != "1" {
		t.Errorf("heartbeat tags %v", tags)
	}
	var body string
	waitFor(t, 10*time.Second, "the crasher's restart in the metrics", func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return strings.Contains(body, `yuzu_agent_plugin_restarts_total{plugin="crasher"} 1`)
	})
	for _, want := range []string{
		`yuzu_agent_commands_total{plugin="tags",status="success"} 1`,
		`yuzu_agent_commands_total{plugin="crasher",status="failure"} 1`,
		`yuzu_agent_command_duration_seconds_count{plugin="tags"} 1`,
		`yuzu_agent_command_start_wait_seconds_count{plugin="tags"} 1`,
		`yuzu_agent_plugin_restarts_total{plugin="tags"} 0`,
		"yuzu_agent_queue_depth 0",
		"yuzu_agent_reconnects_total 0",
		"yuzu_agent_connected 1",
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	a.stop(t)
}

// TestFleetGoroutineDump: SIGUSR1 makes a running agent log every goroutine's stack,
// the session's among them, and it goes on serving (docs/agent.md). The fleet tests
// take such a dump when a command goes unanswered.
func TestFleetGoroutineDump(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, tagsBin)
	a := f.agent()
	// The server sees the subscription before the agent's Subscribe call has returned
	// and its send and receive loops exist: an answered command proves they run.
	expectResult(t, f.do(t, testCtx(t, 30*time.Second), command("before-dump", "tags", "count")), success, 0, "count|0")
	dump := a.goroutines()
	for _, want := range []string{dumpMarker, "session.(*Session).receive", "session.(*Session).send", "supervisor.(*keeper).run"} {
		if !strings.Contains(dump, want) {
			t.Errorf("the dump lacks %q:\n%s", want, dump)
		}
	}
	expectResult(t, f.do(t, testCtx(t, 30*time.Second), command("after-dump", "tags", "count")), success, 0, "count|0")
	if code := a.stop(t); code != 0 {
		t.Errorf("SIGTERM after the dump: exit %d", code)
	}
}

// TestFleetProgress: a real plugin's Output.Progress (the hello example's count)
// reaches the fleet server as RUNNING __progress__ messages, counting up, before the
// terminal answer and never after it (the server helper would show a late one as a
// row, which expectResult refuses).
func TestFleetProgress(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, helloBin)
	f.agent()
	ctx := testCtx(t, 120*time.Second)
	r := f.do(t, ctx, command("count-1", "hello", "count", "n=25", "pause_ms=100"))
	want := make([]string, 25)
	for i := range want {
		want[i] = "number|" + strconv.Itoa(i+1)
	}
	expectResult(t, r, success, 0, want...)
	if len(r.Progress) == 0 {
		t.Fatal("no progress message")
	}
	last := 0
	for _, p := range r.Progress {
		var done int
		if _, err := fmt.Sscanf(p, "__progress__|done=%d|total=25|unit=numbers", &done); err != nil || done <= last || done > 25 {
			t.Errorf("progress %q (after done=%d): want done counting up to 25 of 25 numbers", p, last)
		}
		last = done
	}
}
