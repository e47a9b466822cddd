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

// blockAllOff and stealthOff are the getter answers most cases use.
var (
	blockAllOff = ok("Firewall has block all state set to disabled.\n")
	stealthOff  = ok("Firewall stealth mode is off\n")
)

func TestStateRows(t *testing.T) {
	tests := []struct {
		name string
		in   StateReading
		want []string
	}{
		{"unprivileged sample", StateReading{
			GlobalState: ok("Firewall is disabled. (State = 0)\n"), BlockAll: blockAllOff, StealthMode: stealthOff,
			PfInfo: refused, Anchors: refused, Rules: refused,
		}, []string{"backend|appfirewall", "state|disabled", "block_all|off", "stealth|off", "pf|unknown", "ruleset|unknown"}},
		{"root, everything read", StateReading{
			GlobalState: ok("Firewall is enabled. (State = 1)\n"), BlockAll: blockAllOff, StealthMode: ok("Stealth mode enabled\n"),
			PfInfo:  ok("Status: Enabled for 0 days 00:00:15           Debug: Urgent\n"),
			Anchors: ok(" NordVPN\n com.apple\n com.apple/200.AirDrop\n com.apple/200.AirDrop/Bonjour\n bad|name\n"),
			Rules:   ok("scrub-anchor \"com.apple/*\" all fragment reassemble\nanchor \"com.apple/*\" all\n"),
		}, []string{"backend|appfirewall", "state|enabled", "block_all|off", "stealth|on", "pf|enabled",
			"anchor|NordVPN", "anchor|com.apple", "anchor|com.apple/200.AirDrop", "anchor|com.apple/200.AirDrop/Bonjour",
			"anchor|bad_name", "ruleset|2"}},
		{"block all read from its getter", StateReading{
			GlobalState: ok("Firewall is blocking all non-essential incoming connections. (State = 2)\n"),
			BlockAll:    ok("Firewall has block all state set to enabled.\n"), StealthMode: stealthOff,
			PfInfo:  ok("Status: Disabled for 0 days 00:01:02\n"),
			Anchors: ok(""), Rules: ok(""),
		}, []string{"backend|appfirewall", "state|enabled", "mode|block_all", "block_all|on", "stealth|off", "pf|disabled", "ruleset|0"}},
		// State 2 alone no longer means block-all: a real capture shows State = 2 with
		// block-all disabled.
		{"state 2, block all disabled", StateReading{
			GlobalState: ok("Firewall is enabled. (State = 2)\n"), BlockAll: ok("Block all DISABLED! \n"),
			StealthMode: ok("Stealth mode enabled\n"), PfInfo: refused, Anchors: refused, Rules: refused,
		}, []string{"backend|appfirewall", "state|enabled", "block_all|off", "stealth|on", "pf|unknown", "ruleset|unknown"}},
		{"state 2, block all unreadable", StateReading{
			GlobalState: ok("Firewall is enabled. (State = 2)\n"),
			BlockAll:    ok("Firewall settings cannot be modified from command line on managed Mac computers.\n"),
			StealthMode: ok("ALF: Error, kStealthEnableKey does not return the correct type.\n"),
			PfInfo:      refused, Anchors: refused, Rules: refused,
		}, []string{"backend|appfirewall", "state|enabled", "block_all|unknown", "error|blockall:managed",
			"stealth|unknown", "error|stealthmode:alf_error:ALF: Error, kStealthEnableKey does not return the correct type.",
			"pf|unknown", "ruleset|unknown"}},
		{"unknown wordings", StateReading{
			GlobalState: ok("Pare-feu actif\n"), BlockAll: ok("Block all SOMETIMES!\n"), StealthMode: ok(""),
			PfInfo: refused, Anchors: refused, Rules: refused,
		}, []string{"backend|appfirewall", "state|unknown", "error|globalstate:unrecognized:Pare-feu actif",
			"block_all|unknown", "error|blockall:unrecognized:Block all SOMETIMES!",
			"stealth|unknown", "error|stealthmode:empty", "pf|unknown", "ruleset|unknown"}},
		{"global state exit status not checked", StateReading{
			GlobalState: subprocess.Result{ToolRan: true, ExitCode: 3, Output: []byte("Firewall is enabled. (State = 1)"), Reason: subprocess.ReasonExited},
			BlockAll:    subprocess.Result{ToolRan: true, ExitCode: 1, Output: []byte("Block all DISABLED!"), Reason: subprocess.ReasonExited},
			StealthMode: stealthOff, PfInfo: refused, Anchors: refused, Rules: refused,
		}, []string{"backend|appfirewall", "state|enabled", "block_all|off", "stealth|off", "pf|unknown", "ruleset|unknown"}},
		{"getters timed out or cut", StateReading{
			GlobalState: subprocess.Result{ToolRan: true, ExitCode: -1, TimedOut: true, Output: []byte("Firewall is enabled."), Reason: subprocess.ReasonDeadline},
			BlockAll:    subprocess.Result{ToolRan: true, OutputTruncated: true, Output: []byte("Block all ENABLED!"), Reason: subprocess.ReasonExited},
			StealthMode: subprocess.Result{ToolRan: true, ExitCode: -1, Output: []byte("Stealth mode enabled"), Reason: subprocess.ReasonSignaled},
			PfInfo:      subprocess.Result{ToolRan: true, OutputTruncated: true, Output: []byte("Status: Disabled"), Reason: subprocess.ReasonExited},
			Anchors:     refused, Rules: refused,
		}, []string{"backend|appfirewall", "state|unknown", "error|globalstate:timeout", "block_all|unknown", "error|blockall:truncated",
			"stealth|unknown", "error|stealthmode:signaled", "pf|unknown", "ruleset|unknown"}},
		{"nothing ran", StateReading{},
			[]string{"backend|appfirewall", "state|unknown", "error|globalstate:not_run", "block_all|unknown", "error|blockall:not_run",
				"stealth|unknown", "error|stealthmode:not_run", "pf|unknown", "ruleset|unknown"}},
		{"anchors cut short", StateReading{
			GlobalState: ok("Firewall is disabled. (State = 0)"), BlockAll: blockAllOff, StealthMode: stealthOff,
			PfInfo:  ok("Status: Enabled"),
			Anchors: subprocess.Result{ToolRan: true, OutputTruncated: true, Output: []byte("  a\n  b\n"), Reason: subprocess.ReasonExited},
			Rules:   subprocess.Result{ToolRan: true, ExitCode: -1, TimedOut: true, Output: []byte("pass all\n"), Reason: subprocess.ReasonDeadline},
		}, []string{"backend|appfirewall", "state|disabled", "block_all|off", "stealth|off", "pf|enabled", "ruleset|unknown"}},
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
		"error|listapps:decision:/x: (Something new)",
		"rule|pass in all",
		"rule|  block drop in proto tcp to port 23",
		"anchor|com.apple",
		"ruleset|2")

	// A listapps read that did not complete publishes no apps at all, and says why.
	rowsEqual(t, "listapps truncated", RulesRows(RulesReading{
		ListApps: subprocess.Result{ToolRan: true, OutputTruncated: true, Output: apps, Reason: subprocess.ReasonExited},
		Rules:    ok(""), Anchors: ok(""),
	}), "error|listapps:truncated", "ruleset|0")
	rowsEqual(t, "listapps failed", RulesRows(RulesReading{
		ListApps: subprocess.Result{ToolRan: true, ExitCode: 1, Output: apps, Reason: subprocess.ReasonExited},
		Rules:    refused, Anchors: refused,
	}), "error|listapps:exit:1", "ruleset|unknown")

	// A header announcing apps that do not parse is never an empty list.
	rowsEqual(t, "listapps not understood", RulesRows(RulesReading{
		ListApps: ok("Total number of apps = 2\nA [allowed]\nB [blocked]\n"), Rules: refused, Anchors: refused,
	}), "error|listapps:line:A [allowed]", "error|listapps:line:B [blocked]", "error|listapps:count:2:0", "ruleset|unknown")
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
		sfw + " --getblockall":    ok("Firewall has block all state set to disabled.\n"),
		sfw + " --getstealthmode": ok("Firewall stealth mode is on\n"),
		sfw + " --listapps":       ok("Total number of apps = 1 \n1 : /usr/sbin/cupsd \n  (Allow incoming connections)\n"),
		pf + " -s info":           refused,
		pf + " -v -s Anchors":     refused,
		pf + " -s rules":          refused,
	}}
	r := New()
	r.Run = s.run
	rowsEqual(t, "state", r.State(context.Background()),
		"backend|appfirewall", "state|enabled", "block_all|off", "stealth|on", "pf|unknown", "ruleset|unknown")
	rowsEqual(t, "rules", r.Rules(context.Background()), "app|/usr/sbin/cupsd|allow", "ruleset|unknown")
	wantCalls := []string{
		sfw + " --getglobalstate", sfw + " --getblockall", sfw + " --getstealthmode",
		pf + " -s info", pf + " -v -s Anchors", pf + " -s rules",
		sfw + " --listapps", pf + " -s rules", pf + " -v -s Anchors",
	}
	if !slices.Equal(s.calls, wantCalls) {
		t.Errorf("calls %q\nwant %q", s.calls, wantCalls)
	}
	for _, sp := range s.specs {
		// socketfilterfw's refusals may come on stderr, so they are read; pfctl's
		// stderr is only ALTQ chatter and is dropped.
		wantMerge := sp.Argv[0] == sfw
		if sp.Timeout != 5*time.Second || sp.MergeStderr != wantMerge {
			t.Errorf("spec %+v: want a 5s deadline and MergeStderr %v", sp, wantMerge)
		}
	}

	// Tools that cannot be started: unknown everywhere, no rows invented.
	r.Run = (&scripted{}).run
	rowsEqual(t, "no tools", r.State(context.Background()),
		"backend|appfirewall", "state|unknown", "error|globalstate:not_run", "block_all|unknown", "error|blockall:not_run",
		"stealth|unknown", "error|stealthmode:not_run", "pf|unknown", "ruleset|unknown")
	rowsEqual(t, "no tools rules", r.Rules(context.Background()), "error|listapps:not_run", "ruleset|unknown")
}
