package main

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// firewallCmdListing reads `firewall-cmd --list-all-zones` and `--list-all-policies`
// on the bus and returns the rows the plugin must write for what is in force: every
// zone marked active, the default zone, and every policy marked active. Rows are
// rule|firewalld|<zone or policy:name>|<kind>|<value>; counted are all but the
// target and binding rows. kinds counts the counted rows by kind.
func firewallCmdListing(t *testing.T, tb *testbed, bus string) (want []string, counted int, kinds map[string]int, zones []string) {
	t.Helper()
	s := setup{bus: bus}
	def := strings.TrimSpace(tb.run(s, "/usr/bin/firewall-cmd", "--get-default-zone"))
	kinds = map[string]int{}
	singular := map[string]string{
		"interfaces": "interface", "sources": "source", "ingress-zones": "ingress-zone", "egress-zones": "egress-zone",
		"services": "service", "ports": "port", "protocols": "protocol", "source-ports": "source-port",
		"forward-ports": "forward-port", "icmp-blocks": "icmp-block", "rich rules": "rich-rule",
	}
	context := map[string]bool{"target": true, "interface": true, "source": true, "ingress-zone": true, "egress-zone": true}
	for _, listing := range []struct{ flag, prefix string }{{"--list-all-zones", ""}, {"--list-all-policies", "policy:"}} {
		var label, key string
		keep := false
		add := func(kind, value string) {
			if !keep || value == "" {
				return
			}
			want = append(want, "rule|firewalld|"+label+"|"+kind+"|"+value)
			if !context[kind] {
				counted++
				kinds[kind]++
			}
		}
		for _, line := range strings.Split(tb.run(s, "/usr/bin/firewall-cmd", listing.flag), "\n") {
			switch {
			case line == "":
			case !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "\t"):
				name, attrs, _ := strings.Cut(line, " ")
				label = listing.prefix + name
				keep = strings.Contains(attrs, "active") || (listing.prefix == "" && name == def)
				if keep && listing.prefix == "" {
					zones = append(zones, name)
				}
			case strings.HasPrefix(line, "\t"):
				add(singular[key], strings.TrimPrefix(line, "\t"))
			default:
				k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
				key, v = k, strings.TrimSpace(v)
				switch k {
				case "target":
					add("target", v)
				case "masquerade", "forward", "icmp-block-inversion":
					if v == "yes" {
						add(k, "yes")
					}
				case "summary", "description", "priority":
				default:
					kind, ok := singular[k]
					if !ok {
						t.Fatalf("firewall-cmd prints %q, which this test does not know", line)
					}
					for _, f := range strings.Fields(v) {
						add(kind, f)
					}
				}
			}
		}
	}
	return want, counted, kinds, zones
}

// TestShapeFirewalldLive runs a real firewalld inside the namespace on a private bus:
// five active zones (bound by interface and by source, two of them with no service),
// a default zone with nothing bound to it, and firewalld's own active policy. Every
// service, port, protocol, source port, forward port, ICMP block, rich rule and
// masquerade flag firewall-cmd lists for them is a row, and every zone in force
// appears.
func TestShapeFirewalldLive(t *testing.T) {
	tb := newTestbed(t)
	bus := tb.startBus()
	for _, pair := range [][2]string{{"veth0", "veth1"}, {"veth2", "veth3"}} {
		tb.run(setup{}, "/usr/sbin/ip", "link", "add", pair[0], "type", "veth", "peer", "name", pair[1])
	}
	const head = `<?xml version="1.0" encoding="utf-8"?>` + "\n"
	tb.startFirewalld(bus, "block", map[string]string{
		"public": head + `<zone><short>Public</short>
<service name="ssh"/><service name="https"/><service name="http"/><service name="dhcpv6-client"/>
<port port="8080" protocol="tcp"/><port port="8443" protocol="tcp"/><icmp-block name="echo-request"/>
<rule family="ipv4"><source address="192.168.1.0/24"/><service name="cockpit"/><accept/></rule>
<interface name="veth0"/><forward/></zone>
`,
		"internal": head + `<zone><short>Internal</short>
<service name="ssh"/><service name="dns"/><service name="mdns"/><service name="samba-client"/>
<port port="9090" protocol="tcp"/><source address="10.0.0.0/8"/></zone>
`,
		"dmz": head + `<zone><short>DMZ</short><service name="ssh"/><service name="smtp"/>
<port port="2222" protocol="tcp"/><masquerade/><forward-port port="80" protocol="tcp" to-port="8080"/>
<rule family="ipv4"><source address="198.51.100.7"/><reject/></rule>
<interface name="veth2"/></zone>
`,
		"drop":    head + `<zone target="DROP"><short>Drop</short><source address="203.0.113.0/24"/></zone>` + "\n",
		"trusted": head + `<zone target="ACCEPT"><short>Trusted</short><source address="192.168.50.0/24"/></zone>` + "\n",
	})
	want, counted, kinds, zones := firewallCmdListing(t, tb, bus)

	// The shape the issue measured, as firewall-cmd reports it.
	for kind, n := range map[string]int{"service": 10, "port": 4, "forward-port": 1, "icmp-block": 1, "masquerade": 1} {
		if kinds[kind] != n {
			t.Errorf("firewall-cmd lists %d %s rows, the test expects %d", kinds[kind], kind, n)
		}
	}
	if rich := slices.DeleteFunc(slices.Clone(want), func(r string) bool {
		return !strings.Contains(r, "|rich-rule|") || strings.Contains(r, "|policy:")
	}); len(rich) != 2 {
		t.Errorf("firewall-cmd lists %d zone rich rules, the test expects 2: %q", len(rich), rich)
	}
	if want := []string{"block", "dmz", "drop", "internal", "public", "trusted"}; !slices.Equal(zones, want) {
		t.Errorf("zones in force %q, the test expects %q (five active and the default)", zones, want)
	}

	h := tb.startPlugin(setup{bus: bus})
	ruleset := "ruleset|" + strconv.Itoa(counted)
	rowsMatch(t, "state", runAction(t, h, "state"), "backend|firewalld", "state|running", ruleset)
	got := runAction(t, h, "rules")
	if len(got) < 2 || got[0] != "backend|firewalld" || got[len(got)-1] != ruleset {
		t.Fatalf("rules %q: want backend|firewalld first and %s last", got, ruleset)
	}
	// firewall-cmd sorts services and rich rules its own way; the plugin keeps
	// firewalld's order. The rows must be the same, in any order.
	shown := slices.Sorted(slices.Values(got[1 : len(got)-1]))
	slices.Sort(want)
	rowsMatch(t, "rule rows", shown, want...)
	t.Logf("%d of %d rules shown (%v), %d rows for %d zones and the active policies", counted, counted, kinds, len(shown), len(zones))
}
