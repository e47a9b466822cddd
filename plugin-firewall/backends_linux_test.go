package main

import (
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Every test here builds a host shape in a namespace of its own and checks the
// plugin's rows against an independent reading of the same kernel state by the
// backend's own tool (nft, iptables-legacy-save and ip6tables-legacy-save,
// firewall-cmd): the rules shown must be the rules present, and state is never
// inactive while any of them filters.

func rowsMatch(t testing.TB, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got  %q\n want %q", what, got, want)
	}
}

// nftListing reads `nft -a list ruleset` in the namespace and returns the rows the
// plugin must write for it: one per base chain (rule|nftables|<family>|<table>|
// <chain>|<hook>|<policy>) and one per rule (rule|nftables|<family>|<table>|<chain>|
// handle|<n>), in listing order.
func nftListing(t testing.TB, tb *testbed) (base, rules []string) {
	t.Helper()
	listing := tb.run(setup{}, "/usr/sbin/nft", "-a", "list", "ruleset")
	handle := regexp.MustCompile(`# handle (\d+)$`)
	hook := regexp.MustCompile(`^type \S+ hook (\S+) .*policy (\S+);`)
	block := regexp.MustCompile(`\{ # handle \d+$`)
	var family, table, chain string
	for _, line := range strings.Split(listing, "\n") {
		line = strings.TrimSpace(line)
		f := strings.Fields(line)
		prefix := "rule|nftables|" + family + "|" + table + "|" + chain + "|"
		switch {
		case len(f) >= 3 && f[0] == "table":
			family, table = f[1], f[2]
		case len(f) >= 2 && f[0] == "chain":
			chain = f[1]
		case hook.MatchString(line):
			m := hook.FindStringSubmatch(line)
			base = append(base, prefix+m[1]+"|"+m[2])
		case block.MatchString(line):
			// A set, map or other block: not a rule.
		case handle.MatchString(line):
			rules = append(rules, prefix+"handle|"+handle.FindStringSubmatch(line)[1])
		}
	}
	return base, rules
}

// legacyListing reads iptables-legacy-save and ip6tables-legacy-save in the namespace
// and returns the rows the plugin must write for them, in dump order
// (rule|iptables|<ip|ip6>|<table>|<chain>|<policy|new_chain|append>|<spec>, `|`
// folded to `_`), and the number of rules (-A lines).
func legacyListing(t testing.TB, tb *testbed) (rows []string, count int) {
	t.Helper()
	for _, fam := range []struct{ name, tool string }{{"ip", "iptables-legacy-save"}, {"ip6", "ip6tables-legacy-save"}} {
		table := ""
		for _, line := range strings.Split(tb.run(setup{}, "/usr/sbin/"+fam.tool), "\n") {
			fold := func(s string) string { return strings.ReplaceAll(s, "|", "_") }
			prefix := "rule|iptables|" + fam.name + "|" + table + "|"
			f := strings.Fields(line)
			switch {
			case strings.HasPrefix(line, "*"):
				table = line[1:]
			case strings.HasPrefix(line, ":") && len(f) >= 2 && f[1] == "-":
				rows = append(rows, prefix+f[0][1:]+"|new_chain|")
			case strings.HasPrefix(line, ":") && len(f) >= 2:
				rows = append(rows, prefix+f[0][1:]+"|policy|"+f[1])
			case strings.HasPrefix(line, "-A ") && len(f) >= 2:
				spec := strings.TrimPrefix(line, "-A "+f[1]+" ")
				rows = append(rows, prefix+f[1]+"|append|"+fold(spec))
				count++
			}
		}
	}
	return rows, count
}

func cat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// The legacy host of the issue: 32 rules over filter, nat, mangle and raw in IPv4 and
// filter and raw in IPv6, INPUT and FORWARD dropping in both.
var (
	legacyV4 = filepath.Join("testdata", "legacy_ipv4.rules")
	legacyV6 = filepath.Join("testdata", "legacy_ipv6.rules")
)

const legacyRuleCount = 32

// loadLegacyHost loads the legacy host and returns the rows and count its own tools
// report.
func loadLegacyHost(t *testing.T, tb *testbed) ([]string, int) {
	t.Helper()
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	tb.loadLegacy(abs(legacyV4), abs(legacyV6))
	rows, count := legacyListing(t, tb)
	if count != legacyRuleCount {
		t.Fatalf("iptables-legacy-save and ip6tables-legacy-save list %d rules, the test expects %d", count, legacyRuleCount)
	}
	if _, nftRules := nftListing(t, tb); len(nftRules) != 0 {
		t.Fatalf("nftables sees legacy rules: %q", nftRules)
	}
	return rows, count
}

// TestShapeLegacyUfwNeverEnabled is the default shape of Ubuntu 20.04 and of hosts
// that select iptables-legacy for an older Docker: ufw installed but never enabled
// says "inactive" while the legacy tables drop. The walk goes on to the legacy
// tables, whose every table of both families is listed. Without ufw the same tables
// answer directly.
func TestShapeLegacyUfwNeverEnabled(t *testing.T) {
	needRoot(t)
	for _, tt := range []struct {
		name string
		s    setup
		lead []string
	}{
		{"ufw never enabled", setup{legacy: true, ufw: true}, []string{"fallthrough|ufw:inactive"}},
		{"no ufw", setup{hide: []string{"ufw"}}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tb := newTestbed(t)
			needTools(t, "/usr/sbin/ufw", "/usr/sbin/xtables-legacy-multi")
			present, count := loadLegacyHost(t, tb)
			h := tb.startPlugin(tt.s)
			ruleset := "ruleset|" + strconv.Itoa(count)
			rowsMatch(t, "state", runAction(t, h, "state"),
				cat(tt.lead, []string{"backend|iptables", "state|active", ruleset})...)
			rowsMatch(t, "rules", runAction(t, h, "rules"),
				cat(tt.lead, []string{"backend|iptables"}, present, []string{ruleset})...)
			t.Logf("%s: %d rule rows of %d rules present, %d rows in all", tt.name, count, count, len(present))
		})
	}
}

// TestShapeLegacyPlusNft is the legacy host with one native nftables table beside it:
// both stores are read and the answer is their union, each row naming its store.
func TestShapeLegacyPlusNft(t *testing.T) {
	tb := newTestbed(t)
	present, count := loadLegacyHost(t, tb)
	tb.loadNft(`table inet guard {
  chain input { type filter hook input priority 10; policy accept; tcp dport 23 drop; }
}
`)
	base, nftRules := nftListing(t, tb)
	if len(nftRules) != 1 || len(base) != 1 {
		t.Fatalf("nft lists %d base chains and %d rules, the test expects 1 and 1", len(base), len(nftRules))
	}
	h := tb.startPlugin(setup{ufw: true})
	ruleset := "ruleset|" + strconv.Itoa(count+len(nftRules))
	rowsMatch(t, "state", runAction(t, h, "state"), "backend|nftables", "backend|iptables", "state|active", ruleset)
	rowsMatch(t, "rules", runAction(t, h, "rules"),
		cat([]string{"backend|nftables", "backend|iptables"}, base, nftRules, present, []string{ruleset})...)
	t.Logf("%d of %d rules shown (nftables %d, legacy %d)", count+len(nftRules), count+len(nftRules), len(nftRules), count)
}

// TestShapeLegacyUnreadable is the legacy host with every save tool hidden: the
// kernel lists tables nobody can read. The answer says so and is never "inactive" nor
// a count.
func TestShapeLegacyUnreadable(t *testing.T) {
	tb := newTestbed(t)
	loadLegacyHost(t, tb)
	h := tb.startPlugin(setup{hide: []string{"ufw", "iptables-legacy-save", "iptables-save",
		"ip6tables-legacy-save", "ip6tables-save"}})
	diag := []string{"error|iptables:ip:no_tool", "error|iptables:ip6:no_tool"}
	rowsMatch(t, "state", runAction(t, h, "state"), cat(diag, []string{"backend|iptables", "state|unknown", "ruleset|unknown"})...)
	rowsMatch(t, "rules", runAction(t, h, "rules"), cat(diag, []string{"backend|iptables", "rules|unknown", "ruleset|unknown"})...)
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

// Base chains of every family whose hooks are numbered on their own: netdev ingress
// and egress, arp input and output, bridge, and inet's ingress.
const nftHooks = `table netdev edge {
  chain in { type filter hook ingress device "veth0" priority 0; policy accept; ip saddr 192.0.2.1 drop; }
  chain out { type filter hook egress device "veth0" priority 0; policy accept; }
}
table arp a {
  chain in { type filter hook input priority 0; policy accept; counter; }
  chain out { type filter hook output priority 0; policy drop; }
}
table bridge br {
  chain pre { type filter hook prerouting priority 0; policy accept; }
  chain through { type filter hook forward priority 0; policy accept; counter; }
  chain post { type filter hook postrouting priority 0; policy accept; }
}
table inet i {
  chain ing { type filter hook ingress device "veth0" priority 0; policy accept; }
  chain out { type filter hook output priority 0; policy accept; }
}
`

// TestBackendNftables reads real nftables rulesets loaded into a namespace: active,
// inactive, none at all (with ufw hidden, so the empty ruleset is the answer), and
// base chains of every hook numbering, each named as nft names it.
func TestBackendNftables(t *testing.T) {
	tests := []struct {
		name      string
		ruleset   string
		state     string
		ruleCount int
	}{
		{"active", nftActive, "state|active", 6},
		{"inactive", nftInactive, "state|inactive", 0},
		{"empty", "", "state|inactive", 0},
		{"hooks of every family", nftHooks, "state|active", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := newTestbed(t)
			tb.run(setup{}, "/usr/sbin/ip", "link", "add", "veth0", "type", "veth", "peer", "name", "veth1")
			if tt.ruleset != "" {
				tb.loadNft(tt.ruleset)
			}
			base, rules := nftListing(t, tb)
			if len(rules) != tt.ruleCount {
				t.Fatalf("nft -a lists %d rules, the test expects %d: %q", len(rules), tt.ruleCount, rules)
			}
			h := tb.startPlugin(setup{hide: []string{"ufw"}})
			ruleset := "ruleset|" + strconv.Itoa(tt.ruleCount)
			rowsMatch(t, "state", runAction(t, h, "state"), "backend|nftables", tt.state, ruleset)
			rowsMatch(t, "rules", runAction(t, h, "rules"), cat([]string{"backend|nftables"}, base, rules, []string{ruleset})...)
			if tt.ruleset == nftHooks {
				for _, want := range []string{"|edge|in|ingress|", "|edge|out|egress|", "|a|in|input|", "|a|out|output|",
					"|br|through|forward|", "|i|ing|ingress|"} {
					if !slices.ContainsFunc(base, func(r string) bool { return strings.Contains(r, want) }) {
						t.Errorf("nft lists no base chain %s: %q", want, base)
					}
				}
			}
		})
	}
}

// TestBackendNftablesWithToolsPresent is the active ruleset again with ufw installed:
// nftables has tables, so it answers and ufw is not asked.
func TestBackendNftablesWithToolsPresent(t *testing.T) {
	tb := newTestbed(t)
	tb.loadNft(nftActive)
	h := tb.startPlugin(setup{ufw: true})
	rowsMatch(t, "state", runAction(t, h, "state"), "backend|nftables", "state|active", "ruleset|6")
}

// TestBackendUfw reaches the ufw rung with a real ufw on iptables-legacy, with a
// private copy of its configuration: enabled with numbered rules, and never enabled
// on a kernel that holds nothing else (ufw's own status check leaves empty legacy
// tables behind, which filter nothing).
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
		if present, count := legacyListing(t, tb); count != 0 {
			t.Errorf("the legacy tables hold rules: %q", present)
		}
	})
}

// TestBackendNone hides every tool and refuses every read (the plugin runs as
// nobody), with no bus: nothing answers and nothing is read as off.
func TestBackendNone(t *testing.T) {
	tb := newTestbed(t)
	tb.loadNft(nftActive)
	h := tb.startPlugin(setup{hideSbin: true, nobody: true})
	refused := []string{"error|nftables:table:eperm", "error|iptables:ip:eperm", "error|iptables:ip6:eperm", "backend|none"}
	rowsMatch(t, "state", runAction(t, h, "state"), cat(refused, []string{"state|unknown", "ruleset|unknown"})...)
	rowsMatch(t, "rules", runAction(t, h, "rules"), cat(refused, []string{"rules|unknown", "ruleset|unknown"})...)
}

// TestBackendNotRoot runs the plugin as nobody with every tool installed: the kernel
// refuses the nftables dump and its lists of legacy tables, and ufw refuses to run.
// The answer is unknown, never inactive.
func TestBackendNotRoot(t *testing.T) {
	tb := newTestbed(t)
	needTools(t, "/usr/sbin/ufw", "/usr/sbin/iptables-legacy-save")
	loadLegacyHost(t, tb)
	tb.loadNft(nftActive)
	h := tb.startPlugin(setup{nobody: true})
	refused := []string{"error|nftables:table:eperm", "error|iptables:ip:eperm", "error|iptables:ip6:eperm", "backend|none"}
	rowsMatch(t, "state", runAction(t, h, "state"), cat(refused, []string{"state|unknown", "ruleset|unknown"})...)
	rowsMatch(t, "rules", runAction(t, h, "rules"), cat(refused, []string{"rules|unknown", "ruleset|unknown"})...)
}
