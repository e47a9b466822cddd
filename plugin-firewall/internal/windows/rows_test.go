package windows

import (
	"fmt"
	"slices"
	"testing"

	"github.com/yuzugo/yuzu/sdk/rows"
)

func rowsEqual(t *testing.T, name string, got []rows.Row, want ...string) {
	t.Helper()
	if g := rows.Texts(got); !slices.Equal(g, want) {
		t.Errorf("%s:\n got  %q\n want %q", name, g, want)
	}
}

func threeProfiles(hrs [3]uint32, on [3]bool) []Profile {
	names := []string{"Domain", "Private", "Public"}
	out := make([]Profile, 3)
	for i := range out {
		out[i] = Profile{Name: names[i], HR: hrs[i], Enabled: on[i]}
	}
	return out
}

func TestStateRows(t *testing.T) {
	rowsEqual(t, "sample", StateRows(StateReading{
		Profiles: threeProfiles([3]uint32{0, 0, 0}, [3]bool{true, true, true}), Count: 717,
	}), "profile|Domain|enabled", "profile|Private|enabled", "profile|Public|enabled", "ruleset|717")

	rowsEqual(t, "mixed", StateRows(StateReading{
		Profiles: threeProfiles([3]uint32{0, 1, 0x80070005}, [3]bool{false, true, true}), Count: 3,
	}), "profile|Domain|disabled", "profile|Private|unknown", "profile|Public|unknown",
		"error|firewall_enabled:Public:0x80070005", "ruleset|3")

	// A success code other than S_OK and S_FALSE is not a verdict either, and a policy
	// that answered no switch gives no rule count (as the real one under Wine 8.0).
	rowsEqual(t, "other success code", StateRows(StateReading{
		Profiles: []Profile{{Name: "Domain", HR: 2, Enabled: true}},
	}), "profile|Domain|unknown", "error|firewall_enabled:Domain:0x00000002", "ruleset|unknown")
	rowsEqual(t, "wine: every switch E_NOTIMPL, count 0", StateRows(StateReading{
		Profiles: threeProfiles([3]uint32{0x80004001, 0x80004001, 0x80004001}, [3]bool{true, true, true}),
	}), "profile|Domain|unknown", "error|firewall_enabled:Domain:0x80004001",
		"profile|Private|unknown", "error|firewall_enabled:Private:0x80004001",
		"profile|Public|unknown", "error|firewall_enabled:Public:0x80004001", "ruleset|unknown")
	rowsEqual(t, "only S_FALSE answers", StateRows(StateReading{
		Profiles: threeProfiles([3]uint32{1, 1, 1}, [3]bool{}), Count: 4,
	}), "profile|Domain|unknown", "profile|Private|unknown", "profile|Public|unknown", "ruleset|unknown")

	rowsEqual(t, "com init", StateRows(StateReading{ComInitFailed: true, Count: 5}), "error|com_init")
	rowsEqual(t, "create", StateRows(StateReading{CreateHR: 0x80040154}), "error|policy2_create:0x80040154")
	rowsEqual(t, "get_Rules fails", StateRows(StateReading{
		Profiles: threeProfiles([3]uint32{}, [3]bool{}), RulesHR: 0x80004003,
	}), "profile|Domain|disabled", "profile|Private|disabled", "profile|Public|disabled", "error|rules_count:0x80004003")
	rowsEqual(t, "get_Count fails", StateRows(StateReading{
		Profiles: threeProfiles([3]uint32{}, [3]bool{}), CountHR: 0x8007000e, Count: 9,
	}), "profile|Domain|disabled", "profile|Private|disabled", "profile|Public|disabled", "error|rules_count:0x8007000e")
}

// enumerator replays a list of fetches, then reports the end.
func enumerator(fetches []Fetch) (func() Fetch, *int) {
	calls := 0
	return func() Fetch {
		calls++
		if calls <= len(fetches) {
			return fetches[calls-1]
		}
		return Fetch{HR: 1} // S_FALSE, nothing fetched: the end
	}, &calls
}

func rules(n int) []Fetch {
	out := make([]Fetch, n)
	for i := range out {
		out[i] = Fetch{Fetched: true, Rule: &Rule{Name: fmt.Sprintf("r%d", i), Enabled: true,
			Direction: dirIn, DirectionOK: true, Action: actionAllow, ActionOK: true, Profiles: 7}}
	}
	return out
}

func TestCollectCap(t *testing.T) {
	tests := []struct {
		name      string
		fetches   []Fetch
		n         int
		truncated bool
		calls     int
	}{
		{"none", nil, 0, false, 1},
		{"fewer than the cap", rules(3), 3, false, 4},
		{"exactly the cap", rules(MaxRules), MaxRules, false, MaxRules + 1},
		{"one over", rules(MaxRules + 1), MaxRules, true, MaxRules + 1},
		{"far over", rules(5 * MaxRules), MaxRules, true, MaxRules + 1},
		{"non-rules skipped, not counted", append([]Fetch{{Fetched: true}, {Fetched: true}}, rules(MaxRules)...),
			MaxRules, false, MaxRules + 3},
		{"a non-rule after the cap still marks truncation",
			append(rules(MaxRules), Fetch{Fetched: true}), MaxRules, true, MaxRules + 1},
	}
	for _, tt := range tests {
		next, calls := enumerator(tt.fetches)
		e := Collect(next)
		if len(e.Rules) != tt.n || e.Truncated != tt.truncated || e.Failed || *calls != tt.calls {
			t.Errorf("%s: %d rules, truncated %v, failed %v after %d calls; want %d, %v, false after %d",
				tt.name, len(e.Rules), e.Truncated, e.Failed, *calls, tt.n, tt.truncated, tt.calls)
		}
	}
}

func TestCollectFailure(t *testing.T) {
	next, _ := enumerator(append(rules(2), Fetch{HR: 0x800706ba}, rules(1)[0]))
	e := Collect(next)
	if !e.Failed || e.HR != 0x800706ba || len(e.Rules) != 2 {
		t.Fatalf("got %+v", e)
	}
	rowsEqual(t, "mid-enumeration failure", RuleRows(RulesReading{Enumeration: e}),
		"rule|r0|enabled|in|allow|7", "rule|r1|enabled|in|allow|7", "error|enum_next:0x800706ba", "ruleset|unknown")

	// A failure code with "fetched" set is still a failure.
	next, _ = enumerator([]Fetch{{HR: 0x80004005, Fetched: true, Rule: &Rule{}}})
	if e := Collect(next); !e.Failed || len(e.Rules) != 0 {
		t.Errorf("failed fetch counted: %+v", e)
	}
}

func TestRuleRows(t *testing.T) {
	e := Enumeration{Rules: []Rule{
		{Name: "Logi Options+ Agent", Enabled: true, Direction: dirOut, DirectionOK: true, Action: actionAllow, ActionOK: true, Profiles: 2147483647},
		{Name: "WhatsApp", Enabled: true, Direction: dirOut, DirectionOK: true, Action: actionAllow, ActionOK: true, Profiles: 7},
		{Name: "Block|me\r\n", Direction: dirIn, DirectionOK: true, Action: actionBlock, ActionOK: true, Profiles: 4},
		{Name: "odd values", Enabled: true, Direction: 3, DirectionOK: true, Action: 2, ActionOK: true, Profiles: 1},
		{}, // every getter failed
		{Name: "direction unread", Direction: dirIn, Action: actionAllow, Profiles: 1},
	}}
	rowsEqual(t, "rows", RuleRows(RulesReading{Enumeration: e}),
		"rule|Logi Options+ Agent|enabled|out|allow|2147483647",
		"rule|WhatsApp|enabled|out|allow|7",
		"rule|Block_me__|disabled|in|block|4",
		"rule|odd values|enabled|unknown|unknown|1",
		"rule||disabled|unknown|unknown|0",
		"rule|direction unread|disabled|unknown|unknown|1",
		"ruleset|6")

	next, _ := enumerator(rules(MaxRules + 1))
	got := rows.Texts(RuleRows(RulesReading{Enumeration: Collect(next)}))
	if len(got) != MaxRules+2 || got[MaxRules] != "ruleset|100" || got[MaxRules+1] != "truncated|true" {
		t.Errorf("truncated trailer: %q", got[MaxRules:])
	}
	next, _ = enumerator(rules(MaxRules))
	got = rows.Texts(RuleRows(RulesReading{Enumeration: Collect(next)}))
	if len(got) != MaxRules+1 || got[MaxRules] != "ruleset|100" {
		t.Errorf("exactly 100 rules: %q", got[MaxRules:])
	}
	rowsEqual(t, "empty", RuleRows(RulesReading{}), "ruleset|0")
}

func TestRuleRowsSetupErrors(t *testing.T) {
	tests := []struct {
		in   RulesReading
		want string
	}{
		{RulesReading{ComInitFailed: true}, "error|com_init"},
		{RulesReading{CreateHR: 0x80040154}, "error|policy2_create:0x80040154"},
		{RulesReading{RulesHR: 0x80070005}, "error|rules_create:0x80070005"},
		{RulesReading{EnumHR: 0x80004003}, "error|enum_create:0x80004003"},
		{RulesReading{VariantHR: 0x80004002}, "error|enum_variant:0x80004002"},
		{RulesReading{EnumHR: 1}, "error|enum_create:0x00000001"},
	}
	for _, tt := range tests {
		// Rules gathered before a setup error cannot exist; even if set, they are
		// not shown.
		tt.in.Rules = []Rule{{Name: "x"}}
		rowsEqual(t, tt.want, RuleRows(tt.in), tt.want)
	}
}

func TestFailed(t *testing.T) {
	for hr, want := range map[uint32]bool{0: false, 1: false, 0x7fffffff: false, 0x80000000: true, 0x80070005: true} {
		if Failed(hr) != want {
			t.Errorf("Failed(%#x) = %v", hr, !want)
		}
	}
}
