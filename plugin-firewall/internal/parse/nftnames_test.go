package parse

import "testing"

func TestNftNames(t *testing.T) {
	families := map[uint32]string{0: "unspec", 1: "inet", 2: "ip", 3: "arp", 5: "netdev", 7: "bridge", 10: "ip6",
		99: "family99", 4: "family4"}
	for f, want := range families {
		if got := FamilyName(f); got != want {
			t.Errorf("FamilyName(%d) = %q, want %q", f, got, want)
		}
	}
	hooks := []struct {
		family, h uint32
		present   bool
		want      string
	}{
		{2, 0, true, "prerouting"}, {2, 1, true, "input"}, {10, 2, true, "forward"}, {7, 3, true, "output"},
		{1, 4, true, "postrouting"}, {2, 7, true, "hook7"}, {2, 0, false, "unknown"},
		// Only inet has an ingress hook among the inet-numbered families.
		{1, 5, true, "ingress"}, {2, 5, true, "hook5"}, {7, 5, true, "hook5"},
		// arp and netdev number their hooks their own way.
		{3, 0, true, "input"}, {3, 1, true, "output"}, {3, 2, true, "forward"}, {3, 3, true, "hook3"},
		{5, 0, true, "ingress"}, {5, 1, true, "egress"}, {5, 2, true, "hook2"},
		{99, 1, true, "input"}, {3, 1<<32 - 1, true, "hook4294967295"},
	}
	for _, tt := range hooks {
		if got := HookName(tt.family, tt.h, tt.present); got != tt.want {
			t.Errorf("HookName(%d, %d, %v) = %q, want %q", tt.family, tt.h, tt.present, got, tt.want)
		}
	}
	policies := []struct {
		p       uint32
		present bool
		want    string
	}{
		{1, true, "accept"}, {0, true, "drop"}, {5, true, "policy5"}, {1, false, "unknown"},
	}
	for _, tt := range policies {
		if got := PolicyName(tt.p, tt.present); got != tt.want {
			t.Errorf("PolicyName(%d, %v) = %q, want %q", tt.p, tt.present, got, tt.want)
		}
	}
}

func TestNftRowFormats(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{NftChainRow(1, "filter", "INPUT", HookName(1, 1, true), PolicyName(0, true)).Text(),
			"rule|nftables|inet|filter|INPUT|input|drop"},
		{NftChainRow(2, "fil|ter", "IN\nPUT\r", HookName(2, 0, true), PolicyName(1, true)).Text(),
			"rule|nftables|ip|fil_ter|IN_PUT_|prerouting|accept"},
		{NftRuleRow(10, "filter", "FORWARD", 42, true).Text(), "rule|nftables|ip6|filter|FORWARD|handle|42"},
		{NftRuleRow(10, "filter", "FORWARD", 0, false).Text(), "rule|nftables|ip6|filter|FORWARD|handle|unknown"},
		{NftRuleRow(1, "na|t", "chain\r\n", 7, true).Text(), "rule|nftables|inet|na_t|chain__|handle|7"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
