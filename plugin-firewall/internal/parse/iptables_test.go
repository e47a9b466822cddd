package parse

import (
	"slices"
	"strings"
	"testing"
)

func TestParseIptablesCapture(t *testing.T) {
	entries := ParseIptables(readTestdata(t, "iptables_quarantine.txt"))
	if len(entries) != 9 {
		t.Fatalf("%d entries, want 9: %+v", len(entries), entries)
	}
	checks := map[int]IptEntry{
		0: {IptPolicy, "INPUT", "ACCEPT"},
		2: {IptPolicy, "OUTPUT", "ACCEPT"},
		3: {IptNewChain, "yuzu-quarantine", ""},
		4: {IptAppend, "INPUT", "-j yuzu-quarantine"},
		6: {IptAppend, "yuzu-quarantine", "-m state --state RELATED,ESTABLISHED -j ACCEPT"},
		8: {IptAppend, "yuzu-quarantine", "-j DROP"},
	}
	for i, want := range checks {
		if entries[i] != want {
			t.Errorf("entry %d = %+v, want %+v", i, entries[i], want)
		}
	}
	if s := IptablesState(entries); s != Enabled {
		t.Errorf("state %v, want active", s.Activity())
	}
	if n := IptablesRuleCount(entries); n != 5 {
		t.Errorf("rule count %d, want 5", n)
	}
}

func TestParseIptables(t *testing.T) {
	tests := []struct {
		name  string
		in    []byte
		want  []IptEntry
		state Status
		count int
	}{
		{"fresh netns", readTestdata(t, "iptables_fresh_netns.txt"), []IptEntry{
			{IptPolicy, "INPUT", "ACCEPT"}, {IptPolicy, "FORWARD", "ACCEPT"}, {IptPolicy, "OUTPUT", "ACCEPT"},
		}, Disabled, 0},
		{"unknown line", []byte("-X some-chain\n"), []IptEntry{{IptUnknown, "", "-X some-chain"}}, Unknown, 0},
		{"empty", nil, nil, Unknown, 0},
		{"blank lines only", []byte("\n \r\n\t\n"), nil, Unknown, 0},
		{"drop policy", []byte("-P INPUT DROP\n-P OUTPUT ACCEPT\n"), []IptEntry{
			{IptPolicy, "INPUT", "DROP"}, {IptPolicy, "OUTPUT", "ACCEPT"},
		}, Enabled, 0},
		{"user chain only", []byte("-P INPUT ACCEPT\r\n-N mine\r\n"), []IptEntry{
			{IptPolicy, "INPUT", "ACCEPT"}, {IptNewChain, "mine", ""},
		}, Enabled, 0},
		{"garbage beside policies counts as content", []byte("-P INPUT ACCEPT\n# Warning: something\n"),
			[]IptEntry{{IptPolicy, "INPUT", "ACCEPT"}, {IptUnknown, "", "# Warning: something"}}, Enabled, 0},
		{"policy without target", []byte("-P INPUT\n"), []IptEntry{{IptPolicy, "INPUT", ""}}, Enabled, 0},
		{"tabs", []byte("-A\tINPUT\t-j DROP\n"), []IptEntry{{IptAppend, "INPUT", "-j DROP"}}, Unknown, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseIptables(tt.in)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
			if s := IptablesState(got); s != tt.state {
				t.Errorf("state %v, want %v", s.Activity(), tt.state.Activity())
			}
			if n := IptablesRuleCount(got); n != tt.count {
				t.Errorf("count %d, want %d", n, tt.count)
			}
		})
	}
}

func FuzzParseIptables(f *testing.F) {
	seedTestdata(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		entries := ParseIptables(b)
		nonBlank := 0
		for _, l := range strings.Split(strings.ReplaceAll(string(b), "\r", ""), "\n") {
			if strings.TrimSpace(l) != "" {
				nonBlank++
			}
		}
		if len(entries) != nonBlank {
			t.Fatalf("%d entries from %d non-blank lines", len(entries), nonBlank)
		}
		if IptablesState(entries) == Disabled {
			// Inactive needs every line to be an ACCEPT policy.
			for _, e := range entries {
				if e.Kind != IptPolicy || e.Spec != "ACCEPT" {
					t.Fatalf("inactive with entry %+v from %q", e, b)
				}
			}
			if !strings.Contains(string(b), "-P") {
				t.Fatalf("inactive without a policy line in %q", b)
			}
		}
		for _, e := range entries {
			if strings.ContainsAny(e.Chain+e.Spec, "\r\n") {
				t.Fatalf("entry %+v spans lines", e)
			}
		}
	})
}
