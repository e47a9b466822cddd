package linux

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/yuzugo/yuzu/sdk/rows"
)

// FirewalldBudget bounds the whole firewalld conversation: connecting, listing the
// active zones and policies and reading the settings of each.
const FirewalldBudget = 5 * time.Second

// firewalld's interfaces, all on its one object.
const (
	firewalldMain   = "org.fedoraproject.FirewallD1"
	firewalldZones  = "org.fedoraproject.FirewallD1.zone"
	firewalldPolicy = "org.fedoraproject.FirewallD1.policy"
)

// errNoMethod is wrapped by a call firewalld answered with "no such method": an older
// firewalld that predates it.
var errNoMethod = errors.New("firewalld: no such method")

// FirewalldResult is what the firewalld rung learned.
type FirewalldResult struct {
	// Reachable is true when the bus answered getActiveZones; firewalld then owns the
	// answer even if the rest of the conversation failed.
	Reachable bool
	// Why says, when not Reachable, what failed (for the debug log).
	Why string
	// Complete is true when the settings of every zone and policy listed were read.
	Complete bool
	// Zones are the zones in force, sorted by name: every active zone and the
	// default zone. Policies are the active policies (firewalld 0.9 and later),
	// sorted by name.
	Zones, Policies []Zone
}

// Zone is the runtime settings of one firewalld zone or policy, as firewalld lists
// them (firewall-cmd --list-all-zones shows the same).
type Zone struct {
	Name   string
	Target string
	// Bindings: what traffic the zone (interfaces, sources) or the policy (ingress
	// and egress zones) applies to.
	Interfaces, Sources, Ingress, Egress []string
	// Rules.
	Services, Ports, Protocols, SourcePorts, ForwardPorts, IcmpBlocks, RichRules []string
	Masquerade, Forward, IcmpBlockInversion                                      bool
}

// busCaller is the part of a D-Bus connection the firewalld rung needs: one method
// call on one of firewalld's interfaces, answering the reply body.
type busCaller interface {
	Call(ctx context.Context, iface, method string, args ...any) ([]any, error)
	Close() error
}

// queryFirewalld has the firewalld conversation within budget. Every call is bounded
// by what is left of the budget, so a slow first call leaves less time for the rest
// instead of extending the total.
func queryFirewalld(ctx context.Context, budget time.Duration, connect func(context.Context) (busCaller, error)) FirewalldResult {
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()

	bus, err := connect(ctx)
	if err != nil {
		return FirewalldResult{Why: "no system bus: " + err.Error()}
	}
	defer func() { _ = bus.Close() }()

	body, err := bus.Call(ctx, firewalldZones, "getActiveZones")
	if err != nil {
		return FirewalldResult{Why: "getActiveZones: " + err.Error()}
	}
	res := FirewalldResult{Reachable: true}
	names, ok := decodeActive(body)
	if !ok {
		return res
	}
	// The default zone is in force even with nothing bound to it: firewalld sends
	// the traffic of every interface no zone claims through it.
	body, err = bus.Call(ctx, firewalldMain, "getDefaultZone")
	if err != nil {
		return res
	}
	def, ok := decodeString(body)
	if !ok {
		return res
	}
	if !slices.Contains(names, def) {
		names = append(names, def)
		slices.Sort(names)
	}
	for _, name := range names {
		z, ok := zoneSettings(ctx, bus, name)
		if !ok {
			return res
		}
		res.Zones = append(res.Zones, z)
	}

	body, err = bus.Call(ctx, firewalldPolicy, "getActivePolicies")
	switch {
	case errors.Is(err, errNoMethod):
		// A firewalld older than policies (0.9): there are none to read.
	case err != nil:
		return res
	default:
		names, ok := decodeActive(body)
		if !ok {
			return res
		}
		for _, name := range names {
			body, err := bus.Call(ctx, firewalldPolicy, "getPolicySettings", name)
			if err != nil {
				return res
			}
			p, ok := decodeSettings(body, name)
			if !ok {
				return res
			}
			res.Policies = append(res.Policies, p)
		}
	}
	res.Complete = true
	return res
}

// zoneSettings reads one zone's runtime settings: getZoneSettings2 (a dictionary,
// firewalld 0.9 and later), else the older getZoneSettings (a fixed tuple).
func zoneSettings(ctx context.Context, bus busCaller, name string) (Zone, bool) {
	body, err := bus.Call(ctx, firewalldZones, "getZoneSettings2", name)
	if errors.Is(err, errNoMethod) {
		if body, err = bus.Call(ctx, firewalldMain, "getZoneSettings", name); err != nil {
			return Zone{}, false
		}
		return decodeSettingsTuple(body, name)
	}
	if err != nil {
		return Zone{}, false
	}
	return decodeSettings(body, name)
}

// decodeActive reads a getActiveZones or getActivePolicies reply, a{sa{sas}}: name to
// what is bound to it. Only the names are used. A reply of any other shape is refused,
// never guessed at. The names are sorted because a D-Bus dictionary arrives as a Go
// map, whose order means nothing.
func decodeActive(body []any) ([]string, bool) {
	if len(body) != 1 {
		return nil, false
	}
	m, ok := body[0].(map[string]map[string][]string)
	if !ok {
		return nil, false
	}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, true
}

// decodeString reads a reply holding exactly one string.
func decodeString(body []any) (string, bool) {
	if len(body) != 1 {
		return "", false
	}
	s, ok := body[0].(string)
	return s, ok
}

// settingsTupleKeys names the fields of the getZoneSettings tuple, in order. Older
// firewalld versions send a shorter tuple; each version appended fields.
var settingsTupleKeys = []string{"version", "short", "description", "UNUSED", "target", "services", "ports",
	"icmp_blocks", "masquerade", "forward_ports", "interfaces", "sources", "rules_str", "protocols",
	"source_ports", "icmp_block_inversion"}

// decodeSettingsTuple reads a getZoneSettings reply by naming its fields and decoding
// them as the dictionary form.
func decodeSettingsTuple(body []any, name string) (Zone, bool) {
	if len(body) != 1 {
		return Zone{}, false
	}
	fields, ok := body[0].([]any)
	if !ok || len(fields) <= 4 || len(fields) > len(settingsTupleKeys) {
		return Zone{}, false
	}
	m := make(map[string]dbus.Variant, len(fields))
	for i, f := range fields {
		m[settingsTupleKeys[i]] = dbus.MakeVariant(f)
	}
	z, ok := decodeSettings([]any{m}, name)
	// The tuple form spells the default target as firewalld's internal template.
	if z.Target == "{chain}_{zone}" {
		z.Target = "default"
	}
	return z, ok
}

// decodeSettings reads a getZoneSettings2 or getPolicySettings reply, a{sv}. firewalld
// leaves out the keys whose value is empty. Every key must be one this reader knows
// and of its type: a key it does not know could be a kind of rule it would not show,
// so such a reply is refused (the answer is then incomplete) rather than shown as
// the whole.
func decodeSettings(body []any, name string) (Zone, bool) {
	if len(body) != 1 {
		return Zone{}, false
	}
	m, ok := body[0].(map[string]dbus.Variant)
	if !ok {
		return Zone{}, false
	}
	z := Zone{Name: name}
	lists := map[string]*[]string{
		"interfaces": &z.Interfaces, "sources": &z.Sources,
		"ingress_zones": &z.Ingress, "egress_zones": &z.Egress,
		"services": &z.Services, "protocols": &z.Protocols, "icmp_blocks": &z.IcmpBlocks,
		"rules_str": &z.RichRules, "rich_rules": &z.RichRules,
	}
	tuples := map[string]struct {
		dst   *[]string
		arity int
	}{
		"ports": {&z.Ports, 2}, "source_ports": {&z.SourcePorts, 2}, "forward_ports": {&z.ForwardPorts, 4},
	}
	flags := map[string]*bool{
		"masquerade": &z.Masquerade, "forward": &z.Forward, "icmp_block_inversion": &z.IcmpBlockInversion,
	}
	for key, v := range m {
		val := v.Value()
		if dst, ok := lists[key]; ok {
			s, ok := val.([]string)
			if !ok {
				return Zone{}, false
			}
			*dst = nonEmpty(s)
			continue
		}
		if t, ok := tuples[key]; ok {
			s, ok := decodeTuples(val, t.arity)
			if !ok {
				return Zone{}, false
			}
			*t.dst = nonEmpty(s)
			continue
		}
		if dst, ok := flags[key]; ok {
			b, ok := val.(bool)
			if !ok {
				return Zone{}, false
			}
			*dst = b
			continue
		}
		switch key {
		case "target":
			s, ok := val.(string)
			if !ok {
				return Zone{}, false
			}
			z.Target = s
		case "version", "short", "description", "UNUSED", "priority", "ingress_priority", "egress_priority":
			// Descriptions and ordering, not rules.
		default:
			return Zone{}, false
		}
	}
	// Every zone and policy has a target; a reply without one is not firewalld's.
	return z, z.Target != ""
}

// nonEmpty keeps an empty list as nil, so an absent key and an empty value read alike.
func nonEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// decodeTuples reads an array of string tuples (ports a(ss), forward ports a(ssss))
// into firewall-cmd's spelling: port/protocol, and
// port=P:proto=P:toport=P:toaddr=A for a forward port.
func decodeTuples(val any, arity int) ([]string, bool) {
	list, ok := val.([][]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, t := range list {
		if len(t) != arity {
			return nil, false
		}
		s := make([]string, arity)
		for i, f := range t {
			if s[i], ok = f.(string); !ok {
				return nil, false
			}
		}
		if arity == 2 {
			out = append(out, s[0]+"/"+s[1])
		} else {
			out = append(out, "port="+s[0]+":proto="+s[1]+":toport="+s[2]+":toaddr="+s[3])
		}
	}
	return out, true
}

// Kinds of firewalld rows that name what a zone or policy applies to rather than a
// rule, and are not counted in the ruleset.
var firewalldContext = map[string]bool{
	"target": true, "interface": true, "source": true, "ingress-zone": true, "egress-zone": true,
}

// zoneRows lists one zone or policy: its target, what it applies to, then its rules.
// label is the zone name, or policy:<name> for a policy (zone and policy names cannot
// hold a colon).
func zoneRows(label string, z Zone) []rows.Row {
	var out []rows.Row
	add := func(kind string, values ...string) {
		for _, v := range values {
			out = append(out, rows.New("rule", "firewalld", label, kind, v))
		}
	}
	flag := func(kind string, on bool) {
		if on {
			add(kind, "yes")
		}
	}
	add("target", z.Target)
	add("interface", z.Interfaces...)
	add("source", z.Sources...)
	add("ingress-zone", z.Ingress...)
	add("egress-zone", z.Egress...)
	add("service", z.Services...)
	add("port", z.Ports...)
	add("protocol", z.Protocols...)
	add("source-port", z.SourcePorts...)
	add("forward-port", z.ForwardPorts...)
	add("icmp-block", z.IcmpBlocks...)
	flag("icmp-block-inversion", z.IcmpBlockInversion)
	flag("masquerade", z.Masquerade)
	flag("forward", z.Forward)
	add("rich-rule", z.RichRules...)
	return out
}

// firewalldRows renders a reachable firewalld. Values are written as firewalld gave
// them (only the zone name is sanitized), as upstream writes service names. An
// incomplete read lists nothing at all, so a partial list is never shown as the whole.
func firewalldRows(fw FirewalldResult, rules bool) []rows.Row {
	out := []rows.Row{rows.New("backend", "firewalld")}
	var list []rows.Row
	for _, z := range fw.Zones {
		list = append(list, zoneRows(rows.Sanitize(z.Name), z)...)
	}
	for _, p := range fw.Policies {
		list = append(list, zoneRows("policy:"+rows.Sanitize(p.Name), p)...)
	}
	total := 0
	for _, r := range list {
		if !firewalldContext[r.Fields[2]] {
			total++
		}
	}
	if !rules {
		out = append(out, rows.New("state", "running"))
		if !fw.Complete {
			return append(out, rulesetUnknown())
		}
		return append(out, rulesetCount(total))
	}
	if !fw.Complete {
		return append(out, rulesUnknown(), rulesetUnknown())
	}
	return append(append(out, list...), rulesetCount(total))
}
