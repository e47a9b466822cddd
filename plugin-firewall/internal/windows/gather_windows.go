package windows

import (
	"context"
	"errors"
	"runtime"
	"syscall"

	win "golang.org/x/sys/windows"

	"github.com/yuzugo/yuzu/sdk/rows"
)

// Values of NET_FW_PROFILE_TYPE2 for the three profiles, in row order.
var profiles = []struct {
	name string
	typ  uint32
}{
	{"Domain", 1},
	{"Private", 2},
	{"Public", 4},
}

// Reader reads the Windows Firewall policy over COM.
type Reader struct{}

// New returns a Reader.
func New() *Reader { return &Reader{} }

// State returns the state rows: each profile's switch and the total rule count.
func (*Reader) State(ctx context.Context) []rows.Row {
	var r StateReading
	withCOM(&r.ComInitFailed, func() {
		policy, hr := createPolicy()
		r.CreateHR = hr
		if policy == nil {
			return
		}
		defer policy.release()
		for _, p := range profiles {
			on, hr := policy.policyFirewallEnabled(p.typ)
			r.Profiles = append(r.Profiles, Profile{Name: p.name, HR: hr, Enabled: on})
		}
		rules, hr := policy.getObject(slotPolicyGetRules)
		r.RulesHR = hr
		if rules == nil {
			return
		}
		defer rules.release()
		r.Count, r.CountHR = rules.getInt32(slotRulesGetCount)
	})
	return StateRows(r)
}

// Rules returns the rules rows: up to MaxRules rules, then the count listed. The walk
// stops early, as a failed enumeration, if ctx ends.
func (*Reader) Rules(ctx context.Context) []rows.Row {
	var r RulesReading
	withCOM(&r.ComInitFailed, func() {
		policy, hr := createPolicy()
		r.CreateHR = hr
		if policy == nil {
			return
		}
		defer policy.release()
		rules, hr := policy.getObject(slotPolicyGetRules)
		if r.RulesHR = hr; rules == nil {
			return
		}
		defer rules.release()
		unk, hr := rules.getObject(slotRulesGetNewEnum)
		if r.EnumHR = hr; unk == nil {
			return
		}
		defer unk.release()
		enum, hr := unk.queryInterface(&iidIEnumVARIANT)
		if r.VariantHR = hr; enum == nil {
			return
		}
		defer enum.release()
		r.Enumeration = Collect(func() Fetch {
			if ctx.Err() != nil {
				return Fetch{HR: eAbort}
			}
			return nextRule(enum)
		})
	})
	return RuleRows(r)
}

// nextRule fetches one element and reads it as a rule, releasing everything it got.
func nextRule(enum *comObject) Fetch {
	var v variant
	fetched, hr := enum.enumNext(&v)
	if Failed(hr) || !fetched {
		v.clear()
		return Fetch{HR: hr}
	}
	defer v.clear()
	f := Fetch{HR: hr, Fetched: true}
	disp := v.dispatch()
	if disp == nil {
		return f
	}
	rule, qhr := disp.queryInterface(&iidINetFwRule)
	if qhr != sOK {
		return f
	}
	defer rule.release()
	var r Rule
	// A getter that fails leaves its field at the value the rows treat as unread:
	// an empty name, disabled, unknown direction and action, no profiles.
	if name, hr := rule.getString(slotRuleGetName); hr == sOK {
		r.Name = name
	}
	if on, hr := rule.getBool(slotRuleGetEnabled); hr == sOK {
		r.Enabled = on
	}
	if d, hr := rule.getInt32(slotRuleGetDirection); hr == sOK {
		r.Direction, r.DirectionOK = d, true
	}
	if a, hr := rule.getInt32(slotRuleGetAction); hr == sOK {
		r.Action, r.ActionOK = a, true
	}
	if p, hr := rule.getInt32(slotRuleGetProfiles); hr == sOK {
		r.Profiles = p
	}
	f.Rule = &r
	return f
}

// withCOM runs fn on one OS thread with COM initialised for it (multithreaded, so no
// message loop is needed), and undoes the initialisation afterwards. A thread COM had
// already initialised in the other mode can still make these calls, so that is not a
// failure; it is simply not undone here.
func withCOM(initFailed *bool, fn func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err := win.CoInitializeEx(0, win.COINIT_MULTITHREADED)
	var errno syscall.Errno
	switch {
	case err == nil, errors.As(err, &errno) && uint32(errno) == sFalse:
		defer win.CoUninitialize()
	case errors.As(err, &errno) && uint32(errno) == rpcEChangedMode:
	default:
		*initFailed = true
		return
	}
	fn()
}
