package darwin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/sdk/rows"
	"github.com/yuzugo/yuzu/sdk/subprocess"
)

func ok(out string) subprocess.Result {
	return subprocess.Result{ToolRan: true, Output: []byte(out), Reason: subprocess.ReasonExited}
}

// refused is what pfctl gives an unprivileged caller: nothing on stdout, exit 1.
var refused = subprocess.Result{ToolRan: true, ExitCode: 1, Reason: subprocess.ReasonExited}

func rowsEqual(t *testing.T, name string, got []rows.Row, want ...string) {
	t.Helper()
	if g := rows.Texts(got); !slices.Equal(g, want) {
		t.Errorf("%s:\n got  %q\n want %q", name, g, want)
	}
}

func TestStateRows(t *testing.T) {
	tests := []struct {
		name string
		in   StateReading
		want []string
	}{
		{"unprivileged sample", StateReading{
			GlobalState: ok("Firewall is disabled. (State = 0)\n"),
			PfInfo:      refused, Anchors: refused, Rules: refused,
		}, []string{"backend|appfirewall", "state|disabled", "pf|unknown", "ruleset|unknown"}},
		{"root, everything read", StateReading{
			GlobalState: ok("Firewall is enabled. (State = 1)\n"),
			PfInfo:      ok("Status: Enabled for 0 days 00:00:15           Debug: Urgent\n"),
			Anchors:     ok("  NordVPN\n  com.apple\n  bad|name\n"),
			Rules:       ok("scrub-anchor \"com.apple/*\" all fragment reassemble\nanchor \"com.apple/*\" all\n"),
		}, []string{"backend|appfirewall", "state|enabled", "pf|enabled",
			"anchor|NordVPN", "anchor|com.apple", "anchor|bad_name", "ruleset|2"}},
		{"block all", StateReading{
			GlobalState: ok("Firewall is set to block all incoming connections. (State = 2)\n"),
			PfInfo:      ok("Status: Disabled for 0 days 00:01:02\n"),
			Anchors:     ok(""), Rules: ok(""),
		}, []string{"backend|appfirewall", "state|enabled", "mode|block_all", "pf|disabled", "ruleset|0"}},
		{"global state exit status not checked", StateReading{
			GlobalState: subprocess.Result{ToolRan: true, ExitCode: 3, Output: []byte("Firewall is enabled. (State = 1)"), Reason: subprocess.ReasonExited},
			PfInfo:      refused, Anchors: refused, Rules: refused,
		}, []string{"backend|appfirewall", "state|enabled", "pf|unknown", "ruleset|unknown"}},
		{"global state timed out", StateReading{
			GlobalState: subprocess.Result{ToolRan: true, ExitCode: -1, TimedOut: true, Output: []byte("Firewall is enabled."), Reason: subprocess.ReasonDeadline},
			PfInfo:      subprocess.Result{ToolRan: true, OutputTruncated: true, Output: []byte("Status: Disabled"), Reason: subprocess.ReasonExited},
			Anchors:     refused, Rules: refused,
		}, []string{"backend|appfirewall", "state|unknown", "pf|unknown", "ruleset|unknown"}},
		{"nothing ran", StateReading{},
			[]string{"backend|appfirewall", "state|unknown", "pf|unknown", "ruleset|unknown"}},
		{"anchors cut short", StateReading{
			GlobalState: ok("Firewall is disabled. (State = 0)"),
			PfInfo:      ok("Status: Enabled"),
			Anchors:     subprocess.Result{ToolRan: true, OutputTruncated: true, Output: []byte("  a\n  b\n"), Reason: subprocess.ReasonExited},
			Rules:       subprocess.Result{ToolRan: true, ExitCode: -1, TimedOut: true, Output: []byte("pass all\n"), Reason: subprocess.ReasonDeadline},
		}, []string{"backend|appfirewall", "state|disabled", "pf|enabled", "ruleset|unknown"}},
	}
	for _, tt := range tests {
		rowsEqual(t, tt.name, StateRows(tt.in), tt.want...)
	}
}

func TestRulesRows(t *testing.T) {
	apps, err := os.ReadFile(filepath.Join("testdata", "listapps_8.txt"))
	if err != nil {
		t.Fatal(err)
	}
	rowsEqual(t, "unprivileged sample", RulesRows(RulesReading{ListApps: ok(string(apps)), Rules: refused, Anchors: refused}),
		"app|/usr/local/libexec/remotepairingdeviced|allow",
		"app|/usr/libexec/remoted|allow",
		"app|/usr/bin/python3|allow",
		"app|/usr/bin/ruby|allow",
		"app|/usr/sbin/cupsd|allow",
		"app|/usr/libexec/sharingd|allow",
		"app|/usr/libexec/sshd-keygen-wrapper|allow",
		"app|/usr/sbin/smbd|allow",
		"ruleset|unknown")

	rowsEqual(t, "root", RulesRows(RulesReading{
		ListApps: ok("1 : /Applications/We|rd.app \n  (Block incoming connections)\n2 : /x \n  (Something new)\n"),
		Rules:    ok("pass in all\n\n  block drop in proto tcp to port 23\r\n"),
		Anchors:  ok("  com.apple\n"),
	}),
		"app|/Applications/We_rd.app|block",
		"app|/x|unknown",
		"rule|pass in all",
		"rule|  block drop in proto tcp to port 23",
		"anchor|com.apple",
		"ruleset|2")

	// A listapps read that did not complete publishes no apps at all.
	rowsEqual(t, "listapps truncated", RulesRows(RulesReading{
		ListApps: subprocess.Result{ToolRan: true, OutputTruncated: true, Output: apps, Reason: subprocess.ReasonExited},
		Rules:    ok(""), Anchors: ok(""),
	}), "ruleset|0")
	rowsEqual(t, "listapps failed", RulesRows(RulesReading{
		ListApps: subprocess.Result{ToolRan: true, ExitCode: 1, Output: apps, Reason: subprocess.ReasonExited},
		Rules:    refused, Anchors: refused,
	}), "ruleset|unknown")
}

// scripted is a runner answering from a table keyed by the command line.
type scripted struct {
	answers map[string]subprocess.Result
	calls   []string
	specs   []subprocess.Spec
}

func (s *scripted) run(ctx context.Context, spec subprocess.Spec) (subprocess.Result, error) {
	key := strings.Join(spec.Argv, " ")
	s.calls = append(s.calls, key)
	s.specs = append(s.specs, spec)
	res, ok := s.answers[key]
	if !ok {
		return subprocess.Result{ExitCode: -1}, errors.New("no such tool")
	}
	return res, nil
}

func TestReader(t *testing.T) {
	sfw, pf := SocketfilterfwPath, PfctlPath
	s := &scripted{answers: map[string]subprocess.Result{
		sfw + " --getglobalstate": ok("Firewall is enabled. (State = 1)\n"),
		sfw + " --listapps":       ok("1 : /usr/sbin/cupsd \n  (Allow incoming connections)\n"),
		pf + " -s info":           refused,
		pf + " -s Anchors":        refused,
		pf + " -s rules":          refused,
	}}
	r := New()
	r.Run = s.run
	rowsEqual(t, "state", r.State(context.Background()),
		"backend|appfirewall", "state|enabled", "pf|unknown", "ruleset|unknown")
	rowsEqual(t, "rules", r.Rules(context.Background()), "app|/usr/sbin/cupsd|allow", "ruleset|unknown")
	wantCalls := []string{
		sfw + " --getglobalstate", pf + " -s info", pf + " -s Anchors", pf + " -s rules",
		sfw + " --listapps", pf + " -s rules", pf + " -s Anchors",
	}
	if !slices.Equal(s.calls, wantCalls) {
		t.Errorf("calls %q\nwant %q", s.calls, wantCalls)
	}
	for _, sp := range s.specs {
		if sp.Timeout != 5*time.Second || sp.MergeStderr {
			t.Errorf("spec %+v: want a 5s deadline and stderr discarded", sp)
		}
	}

	// Tools that cannot be started: unknown everywhere, no rows invented.
	r.Run = (&scripted{}).run
	rowsEqual(t, "no tools", r.State(context.Background()),
		"backend|appfirewall", "state|unknown", "pf|unknown", "ruleset|unknown")
	rowsEqual(t, "no tools rules", r.Rules(context.Background()), "ruleset|unknown")
}
