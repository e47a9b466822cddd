package parse

import (
	"strconv"

	"github.com/yuzugo/yuzu/sdk/rows"
)

// FamilyName names an nftables address family (the NFPROTO_* number a table carries).
func FamilyName(family uint32) string {
	switch family {
	case 0:
		return "unspec"
	case 1:
		return "inet"
	case 2:
		return "ip"
	case 3:
		return "arp"
	case 5:
		return "netdev"
	case 7:
		return "bridge"
	case 10:
		return "ip6"
	default:
		return "family" + strconv.FormatUint(uint64(family), 10)
	}
}

// Address families whose hooks are numbered differently from the inet ones.
const (
	familyINet   = 1
	familyARP    = 3
	familyNetdev = 5
)

// HookName names a base chain's netfilter hook the way nft does; present is false for
// a chain that carries no hook. Each family numbers its hooks on its own: ip, ip6,
// inet and bridge count prerouting, input, forward, output, postrouting (and inet adds
// ingress as 5), arp counts input, output, forward, and netdev ingress, egress. A
// number a family does not define is named hook<n>.
func HookName(family, hook uint32, present bool) string {
	if !present {
		return "unknown"
	}
	var names []string
	switch family {
	case familyARP:
		names = []string{"input", "output", "forward"}
	case familyNetdev:
		names = []string{"ingress", "egress"}
	case familyINet:
		names = []string{"prerouting", "input", "forward", "output", "postrouting", "ingress"}
	default:
		names = []string{"prerouting", "input", "forward", "output", "postrouting"}
	}
	if int64(hook) < int64(len(names)) {
		return names[hook]
	}
	return "hook" + strconv.FormatUint(uint64(hook), 10)
}

// PolicyName names a base chain's policy verdict; present is false for a chain that
// carries no policy.
func PolicyName(policy uint32, present bool) string {
	if !present {
		return "unknown"
	}
	switch policy {
	case 0:
		return "drop"
	case 1:
		return "accept"
	default:
		return "policy" + strconv.FormatUint(uint64(policy), 10)
	}
}

// NftChainRow is the rule row for a base chain:
// rule|nftables|<family>|<table>|<chain>|<hook>|<policy>, names sanitized.
func NftChainRow(family uint32, table, chain, hook, policy string) rows.Row {
	return rows.New("rule", "nftables", FamilyName(family), rows.Sanitize(table), rows.Sanitize(chain), hook, policy)
}

// NftRuleRow is the rule row for one rule:
// rule|nftables|<family>|<table>|<chain>|handle|<n>, with "unknown" when the rule
// carried no handle.
func NftRuleRow(family uint32, table, chain string, handle uint64, hasHandle bool) rows.Row {
	h := "unknown"
	if hasHandle {
		h = strconv.FormatUint(handle, 10)
	}
	return rows.New("rule", "nftables", FamilyName(family), rows.Sanitize(table), rows.Sanitize(chain), "handle", h)
}
