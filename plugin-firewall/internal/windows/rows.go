// Package windows reads the Windows Firewall through the INetFwPolicy2 COM interface,
// in process: each profile's on/off switch, the total rule count, and the rules
// themselves (capped at MaxRules).
//
// The COM calls live in the _windows.go files. What they learn is handed to pure
// functions as plain values (HRESULTs, rule fields), so the rows and the enumeration
// rules are tested on any OS; docs/firewall.md describes the rows.
package windows

import (
	"fmt"
	"strconv"

	"github.com/yuzugo/yuzu/plugin-firewall/internal/parse"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// MaxRules is how many rules the rules action lists before it stops with
// truncated|true.
const MaxRules = 100

// HRESULT values the rows distinguish.
const (
	sOK    uint32 = 0
	sFalse uint32 = 1
)

// Failed reports whether hr is a failure code (severity bit set), as the FAILED macro
// does.
func Failed(hr uint32) bool { return int32(hr) < 0 }

// hresult renders an HRESULT as 0x followed by eight hex digits.
func hresult(hr uint32) string { return fmt.Sprintf("0x%08x", hr) }

// Profile is one firewall profile's answer to get_FirewallEnabled.
type Profile struct {
	Name    string // Domain, Private or Public
	HR      uint32
	Enabled bool // meaningful only when HR is S_OK
}

// StateReading is what the state action learned from COM.
type StateReading struct {
	// ComInitFailed is set when COM could not be initialised; nothing else was read.
	ComInitFailed bool
	// CreateHR is CoCreateInstance's result for NetFwPolicy2.
	CreateHR uint32
	// Profiles are the Domain, Private and Public answers, in that order.
	Profiles []Profile
	// RulesHR is get_Rules' result; CountHR and Count are get_Count's.
	RulesHR, CountHR uint32
	Count            int32
}

// StateRows builds the state rows. A profile whose switch reads S_OK is enabled or
// disabled; anything else is unknown, and a code other than S_FALSE (answered, but
// with nothing) is named in an error row right after it, so a roll-up of the state
// column counts every unread switch as unknown, never as off. The rule count is the
// policy's true total, but only from a policy that answered at least one switch: one
// that could tell no profile's state (Wine's stubbed policy answers E_NOTIMPL there
// and then a count of 0 with S_OK) is no clean read of an empty ruleset, so the count
// reads unknown (docs/firewall.md).
func StateRows(r StateReading) []rows.Row {
	if r.ComInitFailed {
		return []rows.Row{rows.New("error", "com_init")}
	}
	if Failed(r.CreateHR) {
		return []rows.Row{rows.New("error", "policy2_create:"+hresult(r.CreateHR))}
	}
	var out []rows.Row
	answered := false
	for _, p := range r.Profiles {
		v := parse.Unknown.String()
		if p.HR == sOK {
			answered = true
			v = parse.Disabled.String()
			if p.Enabled {
				v = parse.Enabled.String()
			}
		}
		out = append(out, rows.New("profile", p.Name, v))
		if p.HR != sOK && p.HR != sFalse {
			out = append(out, rows.New("error", "firewall_enabled:"+p.Name+":"+hresult(p.HR)))
		}
	}
	switch {
	case r.RulesHR != sOK:
		return append(out, rows.New("error", "rules_count:"+hresult(r.RulesHR)))
	case r.CountHR != sOK:
		return append(out, rows.New("error", "rules_count:"+hresult(r.CountHR)))
	case !answered:
		return append(out, rows.New("ruleset", parse.Unknown.String()))
	}
	return append(out, rows.New("ruleset", strconv.FormatInt(int64(r.Count), 10)))
}

// Rule is one firewall rule as read through INetFwRule.
type Rule struct {
	Name string
	// Enabled is false when the flag could not be read.
	Enabled bool
	// Direction and Action are meaningful only when their OK flag is set.
	Direction   int32
	DirectionOK bool
	Action      int32
	ActionOK    bool
	// Profiles is the profile bitmask (1 domain, 2 private, 4 public); 0 when it
	// could not be read.
	Profiles int32
}

// Values of NET_FW_RULE_DIRECTION and NET_FW_ACTION.
const (
	dirIn       = 1
	dirOut      = 2
	actionBlock = 0
	actionAllow = 1
)

// Fetch is the result of one IEnumVARIANT::Next call asking for one element.
type Fetch struct {
	// HR is Next's result.
	HR uint32
	// Fetched is true when an element came back.
	Fetched bool
	// Rule is the element read as a rule, or nil when it was not one (not an
	// IDispatch, or it does not answer to INetFwRule).
	Rule *Rule
}

// Enumeration is the outcome of walking the rule collection.
type Enumeration struct {
	Rules []Rule
	// Truncated is set when another rule followed the MaxRules-th.
	Truncated bool
	// Failed is set when Next failed part-way; HR is its code. Rules read before the
	// failure are kept.
	Failed bool
	HR     uint32
}

// Collect walks an enumerator one element at a time. A failing Next ends the walk as
// failed; an empty fetch ends it cleanly. The cap is checked only after a successful
// fetch, so a collection of exactly MaxRules rules is complete, and truncation is
// reported only when a further element really exists. Elements that are not rules are
// skipped without counting.
func Collect(next func() Fetch) Enumeration {
	var e Enumeration
	for {
		f := next()
		switch {
		case Failed(f.HR):
			e.Failed, e.HR = true, f.HR
			return e
		case !f.Fetched:
			return e
		case len(e.Rules) >= MaxRules:
			e.Truncated = true
			return e
		case f.Rule == nil:
			continue
		}
		e.Rules = append(e.Rules, *f.Rule)
	}
}

// RulesReading is what the rules action learned from COM.
type RulesReading struct {
	ComInitFailed bool
	// CreateHR, RulesHR, EnumHR and VariantHR are the results of creating the
	// policy, get_Rules, get__NewEnum and the query for IEnumVARIANT; the first
	// failure stops the action.
	CreateHR, RulesHR, EnumHR, VariantHR uint32
	Enumeration
}

// RuleRows builds the rules rows: one row per rule, then the count of rules listed (at
// most MaxRules) and truncated|true when more existed. A walk that failed part-way
// keeps the rows already read and ends with the error and ruleset|unknown.
func RuleRows(r RulesReading) []rows.Row {
	switch {
	case r.ComInitFailed:
		return []rows.Row{rows.New("error", "com_init")}
	case Failed(r.CreateHR):
		return []rows.Row{rows.New("error", "policy2_create:"+hresult(r.CreateHR))}
	case r.RulesHR != sOK:
		return []rows.Row{rows.New("error", "rules_create:"+hresult(r.RulesHR))}
	case r.EnumHR != sOK:
		return []rows.Row{rows.New("error", "enum_create:"+hresult(r.EnumHR))}
	case r.VariantHR != sOK:
		return []rows.Row{rows.New("error", "enum_variant:"+hresult(r.VariantHR))}
	}
	out := make([]rows.Row, 0, len(r.Rules)+2)
	for _, rl := range r.Rules {
		out = append(out, ruleRow(rl))
	}
	if r.Failed {
		return append(out, rows.New("error", "enum_next:"+hresult(r.HR)), rows.New("ruleset", "unknown"))
	}
	out = append(out, rows.New("ruleset", strconv.Itoa(len(r.Rules))))
	if r.Truncated {
		out = append(out, rows.New("truncated", "true"))
	}
	return out
}

func ruleRow(r Rule) rows.Row {
	enabled := parse.Disabled.String()
	if r.Enabled {
		enabled = parse.Enabled.String()
	}
	dir := "unknown"
	if r.DirectionOK {
		switch r.Direction {
		case dirIn:
			dir = "in"
		case dirOut:
			dir = "out"
		}
	}
	action := "unknown"
	if r.ActionOK {
		switch r.Action {
		case actionAllow:
			action = "allow"
		case actionBlock:
			action = "block"
		}
	}
	return rows.New("rule", rows.Sanitize(r.Name), enabled, dir, action, strconv.FormatInt(int64(r.Profiles), 10))
}
