package main

import (
	"context"
	"slices"
	"testing"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/sdktest"
	"github.com/yuzugo/yuzu/sdk/subprocess"

	"github.com/yuzugo/yuzu/plugin-firewall/internal/darwin"
	"github.com/yuzugo/yuzu/plugin-firewall/internal/linux"
	"github.com/yuzugo/yuzu/plugin-firewall/internal/parse"
	"github.com/yuzugo/yuzu/plugin-firewall/internal/windows"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// fixedReader answers with the rows it was given.
type fixedReader struct{ state, rules []rows.Row }

func (f fixedReader) State(context.Context) []rows.Row { return f.state }
func (f fixedReader) Rules(context.Context) []rows.Row { return f.rules }

func TestManifest(t *testing.T) {
	m := sdktest.New(t, newPlugin(), sdk.Config{}).Manifest()
	if m.Name != "firewall" || m.Version != "0.7.0" || m.Description != "Firewall status and rule listing" {
		t.Errorf("identity %q %q %q", m.Name, m.Version, m.Description)
	}
	var names []string
	for _, a := range m.Actions {
		names = append(names, a.Name)
	}
	if !slices.Equal(names, []string{"state", "rules"}) {
		t.Fatalf("actions %v", names)
	}
	mechanisms := map[string]string{"linux": "firewalld_dbus", "darwin": "socketfilterfw_pfctl", "windows": "inetfwpolicy2_com"}
	for _, a := range m.Actions {
		if len(a.Params) != 0 {
			t.Errorf("%s declares parameters %v", a.Name, a.Params)
		}
		for goos, mech := range mechanisms {
			s := a.OS(goos)
			if s.Level != sdk.SupportSupported || s.Mechanism != mech || s.Rung != 1 {
				t.Errorf("%s on %s: %+v, want supported, rung 1, %s", a.Name, goos, s, mech)
			}
		}
		if a.Linux.Fallback == "" {
			t.Errorf("%s: the Linux support does not name the rest of the ladder", a.Name)
		}
	}
}

// TestRowsThroughTheSDK checks what the SDK's escaping does to the rows the readers
// hand over: folded names pass unchanged, a trailing backslash of a field that is not
// last becomes a slash, the raw last fields (service names, pf lines) keep their `|`
// and lose CR and LF, and invalid UTF-8 becomes U+FFFD. Both actions end with rc 0 and
// no typed status, whatever they wrote.
func TestRowsThroughTheSDK(t *testing.T) {
	r := fixedReader{
		state: []rows.Row{
			rows.New("backend", "firewalld"),
			rows.New("state", "running"),
			rows.New("error", "nftables:table:eperm"),
			rows.New("ruleset", "unknown"),
		},
		rules: []rows.Row{
			rows.New("rule", "firewalld", rows.Sanitize("pub|lic"), "service", "we|ird"),
			rows.New("rule", "firewalld", "public", "service", "two\r\nlines"),
			rows.New("rule", `C:\Tools\`, "enabled", "in", "allow", "7"),
			rows.New("app", "/Applications/\xff.app", "allow"),
			rows.New("rule", "pass in all\r"),
			rows.New("rule", "iptables", "ip", "filter", "mine", "new_chain", ""),
		},
	}
	h := sdktest.New(t, newPluginWith(r), sdk.Config{})
	tests := []struct {
		action string
		want   []string
	}{
		{"state", []string{"backend|firewalld", "state|running", "error|nftables:table:eperm", "ruleset|unknown"}},
		{"rules", []string{
			"rule|firewalld|pub_lic|service|we|ird",
			"rule|firewalld|public|service|two  lines",
			`rule|C:\Tools/|enabled|in|allow|7`,
			"app|/Applications/\uFFFD.app|allow",
			"rule|pass in all ",
			"rule|iptables|ip|filter|mine|new_chain|",
		}},
	}
	for _, tt := range tests {
		o := h.Run(tt.action, nil)
		if !slices.Equal(o.Rows, tt.want) {
			t.Errorf("%s rows:\n got  %q\n want %q", tt.action, o.Rows, tt.want)
		}
		if o.Result != sdk.Done() {
			t.Errorf("%s result %+v, want rc 0 and UNDECLARED / UNKNOWN", tt.action, o.Result)
		}
	}
	// Parameters are ignored, as upstream ignores them.
	if o := h.Run("state", map[string]string{"verbose": "true"}); o.Result.Code != 0 || len(o.Rows) != 4 {
		t.Errorf("state with a parameter: %v", o)
	}
}

// TestDeclaredRowKinds runs every reader's row builders over inputs that make each of
// them write every kind of row it can, and checks that each kind (error rows aside) is
// declared on the action that writes it.
func TestDeclaredRowKinds(t *testing.T) {
	declared := map[string]map[string]bool{}
	for _, a := range newPlugin().Actions() {
		declared[a.Name] = map[string]bool{"error": true}
		for _, r := range a.Rows {
			declared[a.Name][r.Kind] = true
		}
	}
	ok := func(out string) subprocess.Result {
		return subprocess.Result{ToolRan: true, Output: []byte(out), Reason: subprocess.ReasonExited}
	}
	var state, rules []rows.Row

	// macOS: block-all, stealth, anchors, pf rules, apps.
	state = append(state, darwin.StateRows(darwin.StateReading{
		GlobalState: ok("Firewall is enabled. (State = 2)"), BlockAll: ok("Block all ENABLED!"),
		StealthMode: ok("Stealth mode enabled"), PfInfo: ok("Status: Enabled"),
		Anchors: ok("com.apple\n"), Rules: ok("pass in all\n"),
	})...)
	rules = append(rules, darwin.RulesRows(darwin.RulesReading{
		ListApps: ok("1 : /usr/bin/x \n (Allow incoming connections)\n"),
		Rules:    ok("pass in all\n"), Anchors: ok("com.apple\n"),
	})...)

	// Windows: profiles, rules, truncation.
	state = append(state, windows.StateRows(windows.StateReading{
		Profiles: []windows.Profile{{Name: "Domain", Enabled: true}}, Count: 3,
	})...)
	fetched := 0
	en := windows.Collect(func() windows.Fetch {
		fetched++
		return windows.Fetch{Fetched: true, Rule: &windows.Rule{Name: "r"}}
	})
	rules = append(rules, windows.RuleRows(windows.RulesReading{Enumeration: en})...)

	// Linux: every backend, and a failed nftables read with nothing after it.
	tool := func(out string, exit int) func(context.Context, subprocess.Spec) (subprocess.Result, error) {
		return func(context.Context, subprocess.Spec) (subprocess.Result, error) {
			r := ok(out)
			r.ExitCode = exit
			return r, nil
		}
	}
	failed := linux.NftResult{
		Diag:       []rows.Row{parse.NftFallthroughRow(parse.DumpRule, parse.ReasonTimeout)},
		TablesSeen: true, FailedDump: parse.DumpRule, FailedReason: parse.ReasonTimeout,
	}
	legacy := linux.LegacyResult{Families: []linux.LegacyFamily{{Family: 2, Read: true, Listed: []string{"filter"},
		Tables: []parse.IptTable{{Name: "filter", Entries: []parse.IptEntry{{Kind: parse.IptAppend, Chain: "INPUT", Spec: "-j DROP"}}}}}}}
	ladders := []*linux.Ladder{
		{Firewalld: func(context.Context) linux.FirewalldResult {
			return linux.FirewalldResult{Reachable: true, Complete: true,
				Zones: []linux.Zone{{Name: "public", Target: "default", Services: []string{"ssh"}}}}
		}},
		{Nftables: func(context.Context) linux.NftResult {
			return linux.NftResult{Answered: true, Tables: 1,
				Chains: []linux.NftChain{{Family: 1, Table: "t", Name: "c", Base: true, HasPolicy: true}},
				Rules:  []linux.NftRule{{Family: 1, Table: "t", Chain: "c", Handle: 2, HasHandle: true}}}
		}},
		{Nftables: func(context.Context) linux.NftResult { return failed },
			Run: tool("Status: active\n[ 1] 22/tcp  ALLOW IN  Anywhere\n", 0)},
		{Nftables: func(context.Context) linux.NftResult { return failed },
			Run:    tool("Status: inactive\n", 0),
			Legacy: func(context.Context) linux.LegacyResult { return legacy }},
		{Nftables: func(context.Context) linux.NftResult { return failed }, Run: tool("", 1)},
	}
	for _, l := range ladders {
		if l.Firewalld == nil {
			l.Firewalld = func(context.Context) linux.FirewalldResult { return linux.FirewalldResult{} }
		}
		if l.Legacy == nil {
			l.Legacy = func(context.Context) linux.LegacyResult { return linux.LegacyResult{} }
		}
		if l.Run == nil {
			l.Run = tool("", 1)
		}
		l.UfwPath, l.ToolTimeout, l.Total = "/u", linux.DefaultToolTimeout, linux.DefaultTotal
		state = append(state, l.State(context.Background())...)
		rules = append(rules, l.Rules(context.Background())...)
	}

	seen := map[string]bool{}
	for action, rows := range map[string][]rows.Row{"state": state, "rules": rules} {
		for _, r := range rows {
			seen[action+" "+r.Kind] = true
			if !declared[action][r.Kind] {
				t.Errorf("%s writes %q rows but does not declare them: %s", action, r.Kind, r.Text())
			}
		}
	}
	// The inputs above must really reach every declared kind, or the check proves
	// less than it claims.
	for action, kinds := range declared {
		for kind := range kinds {
			if kind != "error" && !seen[action+" "+kind] {
				t.Errorf("%s declares %q rows that no input here produced", action, kind)
			}
		}
	}
}
