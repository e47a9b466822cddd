package main

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func rowsMatch(t testing.TB, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got  %q\n want %q", what, got, want)
	}
}

// nftHandles reads `nft -a list ruleset` in the namespace and returns the rule rows
// the plugin must write for it, in listing order: rule|nftables|<family>|<table>|
// <chain>|handle|<n>. It is an independent reading of the same kernel state.
func nftHandles(t testing.TB, tb *testbed) []string {
	t.Helper()
	listing := tb.run(setup{}, "/usr/sbin/nft", "-a", "list", "ruleset")
	handle := regexp.MustCompile(`# handle (\d+)$`)
	var family, table, chain string
	var rows []string
	for _, line := range strings.Split(listing, "\n") {
		line = strings.TrimSpace(line)
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "table":
			family, table = f[1], f[2]
		case len(f) >= 2 && f[0] == "chain":
			chain = f[1]
		case handle.MatchString(line):
			rows = append(rows, "rule|nftables|"+family+"|"+table+"|"+chain+"|handle|"+handle.FindStringSubmatch(line)[1])
		}
	}
	return rows
}

// An active nftables ruleset: drop policies, rules in a base chain, a regular chain
// and a second table.
const nftActive = `table inet filter {
  chain input {
    type filter hook input priority 0; policy drop;
    ct state established,related accept
    iif "lo" accept
    tcp dport 22 accept comment "ssh"
    tcp dport { 80, 443 } counter accept
  }
  chain forward { type filter hook forward priority 0; policy drop; }
  chain output { type filter hook output priority 0; policy accept; }
  chain custom { udp dport 53 accept; }
}
table ip nat {
  chain postrouting { type nat hook postrouting priority 100; policy accept; oifname "eth0" masquerade; }
}
`

// An inactive one: base chains that accept everything, no rules.
const nftInactive = `table inet filter {
  chain input { type filter hook input priority 0; policy accept; }
  chain forward { type filter hook forward priority 0; policy accept; }
  chain output { type filter hook output priority 0; policy accept; }
}
`

// TestBackendNftables reads real nftables rulesets loaded into a namespace: active,
// inactive, and none at all with ufw and iptables hidden, so that the empty ruleset
// is the answer. (With them present an empty ruleset hands over to them; see
// TestBackendIptablesLegacy and TestBackendUfw.)
func TestBackendNftables(t *testing.T) {
	tests := []struct {
		name      string
		ruleset   string
		state     []string
		baseRows  []string
		ruleCount string
	}{
		{"active", nftActive,
			[]string{"backend|nftables", "state|active", "ruleset|6"},
			[]string{
				"rule|nftables|inet|filter|input|input|drop",
				"rule|nftables|inet|filter|forward|forward|drop",
				"rule|nftables|inet|filter|output|output|accept",
				"rule|nftables|ip|nat|postrouting|postrouting|accept",
			}, "ruleset|6"},
		{"inactive", nftInactive,
			[]string{"backend|nftables", "state|inactive", "ruleset|0"},
			[]string{
				"rule|nftables|inet|filter|input|input|accept",
				"rule|nftables|inet|filter|forward|forward|accept",
				"rule|nftables|inet|filter|output|output|accept",
			}, "ruleset|0"},
		{"empty", "",
			[]string{"backend|nftables", "state|inactive", "ruleset|0"},
			nil, "ruleset|0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := newTestbed(t)
			if tt.ruleset != "" {
				tb.loadNft(tt.ruleset)
			}
			handles := nftHandles(t, tb)
			if want := strings.TrimPrefix(tt.ruleCount, "ruleset|"); len(handles) != atoi(t, want) {
				t.Fatalf("nft -a lists %d rules, the test expects %s: %q", len(handles), want, handles)
			}
			h := tb.startPlugin(setup{hide: []string{"ufw", "iptables"}})
			rowsMatch(t, "state", runAction(t, h, "state"), tt.state...)
			want := append([]string{"backend|nftables"}, tt.baseRows...)
			want = append(append(want, handles...), tt.ruleCount)
			rowsMatch(t, "rules", runAction(t, h, "rules"), want...)
		})
	}
}

// TestBackendNftablesWithToolsPresent is the active ruleset again with ufw and
// iptables installed: nftables has tables, so it answers and no tool is asked.
func TestBackendNftablesWithToolsPresent(t *testing.T) {
	tb := newTestbed(t)
	tb.loadNft(nftActive)
	h := tb.startPlugin(setup{ufw: true})
	rowsMatch(t, "state", runAction(t, h, "state"), "backend|nftables", "state|active", "ruleset|6")
}

// TestBackendIptablesLegacy reaches the iptables rung: iptables-legacy holds the
// rules, which nftables cannot see, and ufw is not installed.
func TestBackendIptablesLegacy(t *testing.T) {
	tb := newTestbed(t)
	needTools(t, "/usr/sbin/xtables-legacy-multi")
	legacy := setup{legacy: true}
	for _, args := range [][]string{
		{"-P", "INPUT", "DROP"},
		{"-N", "MYCHAIN"},
		{"-A", "INPUT", "-i", "lo", "-j", "ACCEPT"},
		{"-A", "INPUT", "-p", "tcp", "--dport", "22", "-j", "ACCEPT"},
		{"-A", "MYCHAIN", "-s", "10.0.0.0/8", "-j", "DROP"},
	} {
		tb.run(legacy, append([]string{"/usr/sbin/iptables"}, args...)...)
	}
	if got := nftHandles(t, tb); len(got) != 0 {
		t.Fatalf("nftables sees legacy rules: %q", got)
	}
	h := tb.startPlugin(setup{legacy: true, hide: []string{"ufw"}})
	rowsMatch(t, "state", runAction(t, h, "state"), "backend|iptables", "state|active", "ruleset|3")
	rowsMatch(t, "rules", runAction(t, h, "rules"),
		"backend|iptables",
		"rule|policy|INPUT|DROP",
		"rule|policy|FORWARD|ACCEPT",
		"rule|policy|OUTPUT|ACCEPT",
		"rule|new_chain|MYCHAIN|",
		"rule|append|INPUT|-i lo -j ACCEPT",
		"rule|append|INPUT|-p tcp -m tcp --dport 22 -j ACCEPT",
		"rule|append|MYCHAIN|-s 10.0.0.0/8 -j DROP",
		"ruleset|3")
}

// TestBackendUfw reaches the ufw rung with a real ufw on iptables-legacy, with a
// private copy of its configuration: enabled with numbered rules, and disabled.
func TestBackendUfw(t *testing.T) {
	needRoot(t)
	t.Run("active", func(t *testing.T) {
		tb := newTestbed(t)
		needTools(t, "/usr/sbin/ufw", "/usr/sbin/xtables-legacy-multi")
		s := setup{legacy: true, ufw: true}
		tb.run(s, "/usr/sbin/ufw", "--force", "enable")
		tb.run(s, "/usr/sbin/ufw", "allow", "22/tcp")
		tb.run(s, "/usr/sbin/ufw", "allow", "from", "10.0.0.0/8", "to", "any", "port", "5432", "proto", "tcp")
		tb.run(s, "/usr/sbin/ufw", "deny", "out", "25/tcp", "comment", "no smtp")
		h := tb.startPlugin(s)
		rowsMatch(t, "state", runAction(t, h, "state"), "backend|ufw", "state|active", "ruleset|5")
		rowsMatch(t, "rules", runAction(t, h, "rules"),
			"backend|ufw",
			"rule|1|22/tcp|ALLOW IN|Anywhere",
			"rule|2|5432/tcp|ALLOW IN|10.0.0.0/8",
			"rule|3|25/tcp|DENY OUT|Anywhere",
			"rule|4|22/tcp (v6)|ALLOW IN|Anywhere (v6)",
			"rule|5|25/tcp (v6)|DENY OUT|Anywhere (v6)",
			"ruleset|5")
	})
	t.Run("inactive", func(t *testing.T) {
		tb := newTestbed(t)
		needTools(t, "/usr/sbin/ufw", "/usr/sbin/xtables-legacy-multi")
		h := tb.startPlugin(setup{legacy: true, ufw: true})
		rowsMatch(t, "state", runAction(t, h, "state"), "backend|ufw", "state|inactive", "ruleset|0")
		rowsMatch(t, "rules", runAction(t, h, "rules"), "backend|ufw", "ruleset|0")
	})
}

// TestBackendFirewalld runs a real firewalld inside the namespace on a private
// system bus, with two zones bound (one by interface, one by source), and reads it
// through the plugin: the firewalld rung answers, zones sorted by name, each zone's
// services as firewalld lists them. Ports are not part of the answer.
func TestBackendFirewalld(t *testing.T) {
	tb := newTestbed(t)
	bus := tb.startBus()
	tb.run(setup{}, "/usr/sbin/ip", "link", "add", "veth0", "type", "veth", "peer", "name", "veth1")
	tb.startFirewalld(bus, map[string]string{
		"public": `<?xml version="1.0" encoding="utf-8"?>
<zone><short>Public</short><service name="ssh"/><service name="https"/>
<port port="8080" protocol="tcp"/><interface name="veth0"/></zone>
`,
		"internal": `<?xml version="1.0" encoding="utf-8"?>
<zone><short>Internal</short><service name="dns"/><source address="10.0.0.0/8"/></zone>
`,
	})
	h := tb.startPlugin(setup{bus: bus})
	rowsMatch(t, "state", runAction(t, h, "state"), "backend|firewalld", "state|running", "ruleset|3")
	rowsMatch(t, "rules", runAction(t, h, "rules"),
		"backend|firewalld",
		"rule|firewalld|internal|service|dns",
		"rule|firewalld|public|service|ssh",
		"rule|firewalld|public|service|https",
		"ruleset|3")
}

// TestBackendNone hides every tool and refuses nftables (the plugin runs as nobody),
// with no bus: nothing answers and nothing is read as off.
func TestBackendNone(t *testing.T) {
	tb := newTestbed(t)
	tb.loadNft(nftActive)
	h := tb.startPlugin(setup{hideSbin: true, nobody: true})
	rowsMatch(t, "state", runAction(t, h, "state"),
		"error|nftables:table:eperm", "backend|none", "state|unknown", "ruleset|unknown")
	rowsMatch(t, "rules", runAction(t, h, "rules"),
		"error|nftables:table:eperm", "backend|none", "rules|unknown", "ruleset|unknown")
}

// TestBackendNotRoot runs the plugin as nobody with every tool installed: the kernel
// refuses the nftables dump, ufw refuses to run and hands over, and iptables runs and
// fails, which is final. The answer is unknown, never inactive.
func TestBackendNotRoot(t *testing.T) {
	tb := newTestbed(t)
	needTools(t, "/usr/sbin/ufw", "/usr/sbin/iptables")
	tb.loadNft(nftActive)
	h := tb.startPlugin(setup{nobody: true})
	rowsMatch(t, "state", runAction(t, h, "state"),
		"error|nftables:table:eperm", "backend|iptables", "state|unknown", "ruleset|unknown")
	rowsMatch(t, "rules", runAction(t, h, "rules"),
		"error|nftables:table:eperm", "backend|iptables", "rules|unknown", "ruleset|unknown")
}

func atoi(t testing.TB, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
