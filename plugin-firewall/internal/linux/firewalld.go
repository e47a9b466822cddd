package linux

import (
	"context"
	"slices"
	"time"

	"github.com/yuzugo/yuzu/plugin-firewall/internal/row"

	"github.com/yuzugo/yuzu/sdk/rows"
)

// FirewalldBudget bounds the whole firewalld conversation: connecting, listing the
// active zones and asking each zone for its services.
const FirewalldBudget = 5 * time.Second

// FirewalldResult is what the firewalld rung learned.
type FirewalldResult struct {
	// Reachable is true when the bus answered getActiveZones; firewalld then owns the
	// answer even if the rest of the conversation failed.
	Reachable bool
	// Complete is true when every zone's services were read.
	Complete bool
	// Zones are the active zones sorted by name, with their services as firewalld
	// listed them.
	Zones []Zone
}

// Zone is one active firewalld zone.
type Zone struct {
	Name     string
	Services []string
}

// busCaller is the part of a D-Bus connection the firewalld rung needs: one method
// call on firewalld's zone interface, answering the reply body.
type busCaller interface {
	Call(ctx context.Context, method string, args ...any) ([]any, error)
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
		return FirewalldResult{}
	}
	defer func() { _ = bus.Close() }()

	body, err := bus.Call(ctx, "getActiveZones")
	if err != nil {
		return FirewalldResult{}
	}
	res := FirewalldResult{Reachable: true}
	names, ok := decodeActiveZones(body)
	if !ok {
		return res
	}
	zones := make([]Zone, 0, len(names))
	for _, name := range names {
		if ctx.Err() != nil {
			return res
		}
		body, err := bus.Call(ctx, "getServices", name)
		if err != nil {
			return res
		}
		services, ok := decodeStrings(body)
		if !ok {
			return res
		}
		zones = append(zones, Zone{Name: name, Services: services})
	}
	res.Zones, res.Complete = zones, true
	return res
}

// decodeActiveZones reads a getActiveZones reply, a{sa{sas}}: zone name to the
// interfaces and sources bound to it. Only the names are used. A reply of any other
// shape is refused, never guessed at. The names are sorted because a D-Bus dictionary
// arrives as a Go map, whose order means nothing.
func decodeActiveZones(body []any) ([]string, bool) {
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

// decodeStrings reads a reply holding exactly one array of strings (`as`).
func decodeStrings(body []any) ([]string, bool) {
	if len(body) != 1 {
		return nil, false
	}
	s, ok := body[0].([]string)
	return s, ok
}

// firewalldRows renders a reachable firewalld. Service names are written as firewalld
// gave them (only the zone name is sanitized), matching upstream rows. An incomplete
// read lists no services at all, so a partial list is never shown as the whole.
func firewalldRows(fw FirewalldResult, rules bool) []row.Row {
	out := []row.Row{row.New("backend", "firewalld")}
	total := 0
	for _, z := range fw.Zones {
		total += len(z.Services)
	}
	if !rules {
		out = append(out, row.New("state", "running"))
		if !fw.Complete {
			return append(out, rulesetUnknown())
		}
		return append(out, rulesetCount(total))
	}
	if !fw.Complete {
		return append(out, rulesUnknown(), rulesetUnknown())
	}
	for _, z := range fw.Zones {
		zone := rows.Sanitize(z.Name)
		for _, s := range z.Services {
			out = append(out, row.New("rule", "firewalld", zone, "service", s))
		}
	}
	return append(out, rulesetCount(total))
}
