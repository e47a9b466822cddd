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
		h       uint32
		present bool
		want    string
	}{
		{0, true, "prerouting"}, {1, true, "input"}, {2, true, "forward"}, {3, true, "output"},
		{4, true, "postrouting"}, {7, true, "hook7"}, {0, false, "unknown"},
	}
	for _, tt := range hooks {
		if got := HookName(tt.h, tt.present); got != tt.want {
			t.Errorf("HookName(%d, %v) = %q, want %q", tt.h, tt.present, got, tt.want)
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
		{NftChainRow(1, "filter", "INPUT", HookName(1, true), PolicyName(0, true)).Text(),
			"rule|nftables|inet|filter|INPUT|input|drop"},
		{NftChainRow(2, "fil|ter", "IN\nPUT\r", HookName(0, true), PolicyName(1, true)).Text(),
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
