package linux

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// fakeBus answers firewalld calls from a table keyed by "<interface>.<method>". A
// method missing from the table answers as an older firewalld does: no such method.
// A reply function may block until the call's context ends, like a peer that never
// answers.
type fakeBus struct {
	methods map[string]func(ctx context.Context, args []any) ([]any, error)
	calls   []string
	closed  bool
}

func (b *fakeBus) Call(ctx context.Context, iface, method string, args ...any) ([]any, error) {
	name := iface + "." + method
	b.calls = append(b.calls, fmt.Sprint(append([]any{name}, args...)...))
	fn, ok := b.methods[name]
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, errNoMethod)
	}
	return fn(ctx, args)
}

func (b *fakeBus) Close() error { b.closed = true; return nil }

func reply(v ...any) func(context.Context, []any) ([]any, error) {
	return func(context.Context, []any) ([]any, error) { return v, nil }
}

func hang(ctx context.Context, _ []any) ([]any, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// settings builds a getZoneSettings2 reply from Go values.
func settings(kv ...any) map[string]dbus.Variant {
	m := map[string]dbus.Variant{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = dbus.MakeVariant(kv[i+1])
	}
	return m
}

// perZone answers a settings call from a table keyed by the zone or policy name.
func perZone(m map[string]map[string]dbus.Variant) func(context.Context, []any) ([]any, error) {
	return func(_ context.Context, args []any) ([]any, error) {
		s, ok := m[args[0].(string)]
		if !ok {
			return nil, errors.New("INVALID_ZONE")
		}
		return []any{s}, nil
	}
}

var (
	publicSettings = settings("target", "default", "short", "Public", "interfaces", []string{"eth0"},
		"services", []string{"ssh", "https"},
		"ports", [][]any{{"8080", "tcp"}, {"5000-5010", "udp"}},
		"protocols", []string{"gre"},
		"source_ports", [][]any{{"68", "udp"}},
		"forward_ports", [][]any{{"80", "tcp", "8080", ""}},
		"icmp_blocks", []string{"echo-request"},
		"rules_str", []string{`rule family="ipv4" source address="192.168.1.0/24" service name="http" accept`},
		"masquerade", true, "forward", true, "icmp_block_inversion", false)
	dropSettings   = settings("target", "DROP", "sources", []string{"203.0.113.0/24"}, "forward", false)
	workSettings   = settings("target", "default", "services", []string{"dhcpv6-client"})
	policySettings = settings("target", "CONTINUE", "priority", int32(-15000), "ingress_zones", []string{"ANY"},
		"egress_zones", []string{"HOST"}, "rich_rules", []string{`rule family="ipv6" icmp-type name="redirect" accept`})
	twoActive = map[string]map[string][]string{
		"public": {"interfaces": {"eth0"}},
		"drop":   {"sources": {"203.0.113.0/24"}},
	}
)

// goodBus is a firewalld 1.x: two active zones, a default zone with nothing bound to
// it, one active policy.
func goodBus() *fakeBus {
	return &fakeBus{methods: map[string]func(context.Context, []any) ([]any, error){
		firewalldZones + ".getActiveZones": reply(twoActive),
		firewalldMain + ".getDefaultZone":  reply("work"),
		firewalldZones + ".getZoneSettings2": perZone(map[string]map[string]dbus.Variant{
			"public": publicSettings, "drop": dropSettings, "work": workSettings}),
		firewalldPolicy + ".getActivePolicies": reply(map[string]map[string][]string{
			"allow-host-ipv6": {"ingress_zones": {"ANY"}, "egress_zones": {"HOST"}}}),
		firewalldPolicy + ".getPolicySettings": perZone(map[string]map[string]dbus.Variant{"allow-host-ipv6": policySettings}),
	}}
}

var (
	publicZone = Zone{Name: "public", Target: "default", Interfaces: []string{"eth0"},
		Services: []string{"ssh", "https"}, Ports: []string{"8080/tcp", "5000-5010/udp"}, Protocols: []string{"gre"},
		SourcePorts: []string{"68/udp"}, ForwardPorts: []string{"port=80:proto=tcp:toport=8080:toaddr="},
		IcmpBlocks: []string{"echo-request"},
		RichRules:  []string{`rule family="ipv4" source address="192.168.1.0/24" service name="http" accept`},
		Masquerade: true, Forward: true}
	dropZone   = Zone{Name: "drop", Target: "DROP", Sources: []string{"203.0.113.0/24"}}
	workZone   = Zone{Name: "work", Target: "default", Services: []string{"dhcpv6-client"}}
	hostPolicy = Zone{Name: "allow-host-ipv6", Target: "CONTINUE", Ingress: []string{"ANY"}, Egress: []string{"HOST"},
		RichRules: []string{`rule family="ipv6" icmp-type name="redirect" accept`}}
)

func TestQueryFirewalld(t *testing.T) {
	complete := FirewalldResult{Reachable: true, Complete: true,
		Zones: []Zone{dropZone, publicZone, workZone}, Policies: []Zone{hostPolicy}}
	tests := []struct {
		name       string
		connectErr error
		change     func(b *fakeBus)
		want       FirewalldResult
	}{
		{"no bus", errors.New("dial unix /nonexistent: connect: no such file or directory"), nil, FirewalldResult{}},
		{"firewalld not running", nil, func(b *fakeBus) {
			b.methods[firewalldZones+".getActiveZones"] = func(context.Context, []any) ([]any, error) {
				return nil, errors.New("org.freedesktop.DBus.Error.ServiceUnknown")
			}
		}, FirewalldResult{}},
		{"complete", nil, nil, complete},
		{"default zone already active", nil, func(b *fakeBus) {
			b.methods[firewalldMain+".getDefaultZone"] = reply("public")
		}, FirewalldResult{Reachable: true, Complete: true, Zones: []Zone{dropZone, publicZone}, Policies: []Zone{hostPolicy}}},
		{"nothing active but the default zone", nil, func(b *fakeBus) {
			b.methods[firewalldZones+".getActiveZones"] = reply(map[string]map[string][]string{})
			b.methods[firewalldPolicy+".getActivePolicies"] = reply(map[string]map[string][]string{})
		}, FirewalldResult{Reachable: true, Complete: true, Zones: []Zone{workZone}}},
		{"firewalld before policies", nil, func(b *fakeBus) {
			delete(b.methods, firewalldPolicy+".getActivePolicies")
		}, FirewalldResult{Reachable: true, Complete: true, Zones: []Zone{dropZone, publicZone, workZone}}},
		{"firewalld before getZoneSettings2", nil, func(b *fakeBus) {
			delete(b.methods, firewalldZones+".getZoneSettings2")
			delete(b.methods, firewalldPolicy+".getActivePolicies")
			b.methods[firewalldMain+".getZoneSettings"] = func(_ context.Context, args []any) ([]any, error) {
				tuples := map[string][]any{
					"public": {"", "Public", "", false, "default", []string{"ssh", "https"},
						[][]any{{"8080", "tcp"}, {"5000-5010", "udp"}}, []string{"echo-request"}, true,
						[][]any{{"80", "tcp", "8080", ""}}, []string{"eth0"}, []string{},
						[]string{`rule family="ipv4" source address="192.168.1.0/24" service name="http" accept`},
						[]string{"gre"}, [][]any{{"68", "udp"}}, false},
					// An older tuple, without protocols, source ports and inversion,
					// and the internal spelling of the default target.
					"drop": {"1", "Drop", "", false, "DROP", []string{}, [][]any{}, []string{}, false, [][]any{},
						[]string{}, []string{"203.0.113.0/24"}, []string{}},
					"work": {"", "", "", false, "{chain}_{zone}", []string{"dhcpv6-client"}},
				}
				return []any{tuples[args[0].(string)]}, nil
			}
		}, FirewalldResult{Reachable: true, Complete: true, Zones: []Zone{
			dropZone, {Name: "public", Target: "default", Interfaces: []string{"eth0"},
				Services: publicZone.Services, Ports: publicZone.Ports, Protocols: publicZone.Protocols,
				SourcePorts: publicZone.SourcePorts, ForwardPorts: publicZone.ForwardPorts,
				IcmpBlocks: publicZone.IcmpBlocks, RichRules: publicZone.RichRules, Masquerade: true},
			workZone}}},
		{"active zones of another type", nil, func(b *fakeBus) {
			b.methods[firewalldZones+".getActiveZones"] = reply(map[string]string{"public": "eth0"})
		}, FirewalldResult{Reachable: true}},
		{"active zones with two values", nil, func(b *fakeBus) {
			b.methods[firewalldZones+".getActiveZones"] = reply(twoActive, twoActive)
		}, FirewalldResult{Reachable: true}},
		{"empty reply", nil, func(b *fakeBus) { b.methods[firewalldZones+".getActiveZones"] = reply() },
			FirewalldResult{Reachable: true}},
		{"default zone refused", nil, func(b *fakeBus) {
			b.methods[firewalldMain+".getDefaultZone"] = func(context.Context, []any) ([]any, error) { return nil, errors.New("denied") }
		}, FirewalldResult{Reachable: true}},
		{"default zone of another type", nil, func(b *fakeBus) { b.methods[firewalldMain+".getDefaultZone"] = reply(int32(1)) },
			FirewalldResult{Reachable: true}},
		{"a zone's settings refused", nil, func(b *fakeBus) {
			b.methods[firewalldZones+".getZoneSettings2"] = perZone(map[string]map[string]dbus.Variant{"public": publicSettings})
		}, FirewalldResult{Reachable: true, Zones: []Zone{}}},
		{"a setting firewalld did not have", nil, func(b *fakeBus) {
			s := settings("target", "default", "future_rules", []string{"x"})
			b.methods[firewalldZones+".getZoneSettings2"] = perZone(map[string]map[string]dbus.Variant{
				"public": publicSettings, "drop": s, "work": workSettings})
		}, FirewalldResult{Reachable: true}},
		{"a setting of another type", nil, func(b *fakeBus) {
			s := settings("target", "default", "ports", []string{"8080/tcp"})
			b.methods[firewalldZones+".getZoneSettings2"] = perZone(map[string]map[string]dbus.Variant{
				"public": publicSettings, "drop": s, "work": workSettings})
		}, FirewalldResult{Reachable: true}},
		{"a port tuple of the wrong size", nil, func(b *fakeBus) {
			s := settings("target", "default", "forward_ports", [][]any{{"80", "tcp"}})
			b.methods[firewalldZones+".getZoneSettings2"] = perZone(map[string]map[string]dbus.Variant{
				"public": publicSettings, "drop": s, "work": workSettings})
		}, FirewalldResult{Reachable: true}},
		{"settings without a target", nil, func(b *fakeBus) {
			b.methods[firewalldZones+".getZoneSettings2"] = perZone(map[string]map[string]dbus.Variant{
				"public": publicSettings, "drop": settings("services", []string{"ssh"}), "work": workSettings})
		}, FirewalldResult{Reachable: true}},
		{"policies refused", nil, func(b *fakeBus) {
			b.methods[firewalldPolicy+".getActivePolicies"] = func(context.Context, []any) ([]any, error) {
				return nil, errors.New("denied")
			}
		}, FirewalldResult{Reachable: true}},
		{"a policy's settings refused", nil, func(b *fakeBus) {
			delete(b.methods, firewalldPolicy+".getPolicySettings")
		}, FirewalldResult{Reachable: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus := goodBus()
			if tt.change != nil {
				tt.change(bus)
			}
			connect := func(context.Context) (busCaller, error) {
				if tt.connectErr != nil {
					return nil, tt.connectErr
				}
				return bus, nil
			}
			got := queryFirewalld(context.Background(), time.Second, connect)
			if got.Reachable != tt.want.Reachable || got.Complete != tt.want.Complete {
				t.Fatalf("reachable %v complete %v, want %v %v", got.Reachable, got.Complete, tt.want.Reachable, tt.want.Complete)
			}
			if tt.want.Complete && (!reflect.DeepEqual(got.Zones, tt.want.Zones) || !reflect.DeepEqual(got.Policies, tt.want.Policies)) {
				t.Errorf("zones %+v\npolicies %+v\nwant %+v\n%+v", got.Zones, got.Policies, tt.want.Zones, tt.want.Policies)
			}
			if tt.connectErr == nil && !bus.closed {
				t.Error("connection not closed")
			}
		})
	}
}

func TestFirewalldRows(t *testing.T) {
	fw := FirewalldResult{Reachable: true, Complete: true,
		Zones:    []Zone{dropZone, {Name: "od|d\nzone", Target: "ACCEPT", Services: []string{"we|ird"}}, publicZone},
		Policies: []Zone{hostPolicy}}
	rowsEqual(t, "state", firewalldRows(fw, false), "backend|firewalld", "state|running", "ruleset|13")
	rowsEqual(t, "rules", firewalldRows(fw, true),
		"backend|firewalld",
		"rule|firewalld|drop|target|DROP",
		"rule|firewalld|drop|source|203.0.113.0/24",
		"rule|firewalld|od_d_zone|target|ACCEPT",
		"rule|firewalld|od_d_zone|service|we|ird", // values are not sanitized
		"rule|firewalld|public|target|default",
		"rule|firewalld|public|interface|eth0",
		"rule|firewalld|public|service|ssh",
		"rule|firewalld|public|service|https",
		"rule|firewalld|public|port|8080/tcp",
		"rule|firewalld|public|port|5000-5010/udp",
		"rule|firewalld|public|protocol|gre",
		"rule|firewalld|public|source-port|68/udp",
		"rule|firewalld|public|forward-port|port=80:proto=tcp:toport=8080:toaddr=",
		"rule|firewalld|public|icmp-block|echo-request",
		"rule|firewalld|public|masquerade|yes",
		"rule|firewalld|public|forward|yes",
		`rule|firewalld|public|rich-rule|rule family="ipv4" source address="192.168.1.0/24" service name="http" accept`,
		"rule|firewalld|policy:allow-host-ipv6|target|CONTINUE",
		"rule|firewalld|policy:allow-host-ipv6|ingress-zone|ANY",
		"rule|firewalld|policy:allow-host-ipv6|egress-zone|HOST",
		`rule|firewalld|policy:allow-host-ipv6|rich-rule|rule family="ipv6" icmp-type name="redirect" accept`,
		"ruleset|13")

	inversion := FirewalldResult{Reachable: true, Complete: true, Zones: []Zone{{Name: "z", Target: "default", IcmpBlockInversion: true}}}
	rowsEqual(t, "inversion", firewalldRows(inversion, true),
		"backend|firewalld", "rule|firewalld|z|target|default", "rule|firewalld|z|icmp-block-inversion|yes", "ruleset|1")

	incomplete := FirewalldResult{Reachable: true, Zones: []Zone{publicZone}}
	rowsEqual(t, "incomplete state", firewalldRows(incomplete, false), "backend|firewalld", "state|running", "ruleset|unknown")
	rowsEqual(t, "incomplete rules", firewalldRows(incomplete, true), "backend|firewalld", "rules|unknown", "ruleset|unknown")
}

func TestQueryFirewalldBudget(t *testing.T) {
	// getActiveZones never answers: the rung gives up within its budget and does
	// not count as reachable.
	bus := goodBus()
	bus.methods[firewalldZones+".getActiveZones"] = hang
	start := time.Now()
	got := queryFirewalld(context.Background(), 30*time.Millisecond,
		func(context.Context) (busCaller, error) { return bus, nil })
	if got.Reachable {
		t.Errorf("hanging getActiveZones counted as reachable: %+v", got)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v with a 30ms budget", d)
	}

	// A settings call never answers: reachable but incomplete, within the same budget.
	bus = goodBus()
	bus.methods[firewalldZones+".getZoneSettings2"] = hang
	start = time.Now()
	got = queryFirewalld(context.Background(), 30*time.Millisecond,
		func(context.Context) (busCaller, error) { return bus, nil })
	if !got.Reachable || got.Complete {
		t.Errorf("hanging getZoneSettings2: %+v", got)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v with a 30ms budget", d)
	}

	// The budget is shared: a slow first zone leaves the next one no time, so the
	// total never exceeds it.
	calls := 0
	bus = goodBus()
	bus.methods[firewalldZones+".getZoneSettings2"] = func(ctx context.Context, args []any) ([]any, error) {
		calls++
		if calls == 1 {
			select {
			case <-time.After(40 * time.Millisecond):
			case <-ctx.Done():
			}
			return []any{dropSettings}, nil
		}
		return hang(ctx, args)
	}
	start = time.Now()
	got = queryFirewalld(context.Background(), 50*time.Millisecond,
		func(context.Context) (busCaller, error) { return bus, nil })
	if !got.Reachable || got.Complete {
		t.Errorf("shared budget: %+v", got)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v with a 50ms budget", d)
	}

	// The connection attempt itself is given the budget's context.
	var connectDeadline time.Time
	queryFirewalld(context.Background(), time.Minute, func(ctx context.Context) (busCaller, error) {
		connectDeadline, _ = ctx.Deadline()
		return nil, errors.New("no bus")
	})
	if connectDeadline.IsZero() || time.Until(connectDeadline) > time.Minute {
		t.Errorf("connect deadline %v", connectDeadline)
	}
}

func TestDecodeActiveSorted(t *testing.T) {
	m := map[string]map[string][]string{"z": nil, "a": nil, "m": {"interfaces": {"x"}}}
	for range 20 { // map order varies between runs; the answer must not
		got, ok := decodeActive([]any{m})
		if !ok || !slices.Equal(got, []string{"a", "m", "z"}) {
			t.Fatalf("got %q, %v", got, ok)
		}
	}
}
