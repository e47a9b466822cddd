package linux

import (
	"github.com/yuzugo/yuzu/plugin-firewall/internal/parse"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// NftResult is what the nftables rung read.
type NftResult struct {
	// Diag holds the error and fallthrough rows of a failed read, in the order the
	// failures happened. They are written whatever backend answers later.
	Diag []rows.Row
	// Answered is true when the table, chain and rule dumps all completed.
	Answered bool
	// Absent is true when the kernel has no nftables at all (the netlink protocol
	// is not supported), so there is nothing to read: not a failure.
	Absent bool
	// Tables is the number of named tables a completed read found.
	Tables int
	// TablesSeen is true when the table dump completed and named at least one table
	// but a later dump failed. It keeps a later "disabled" verdict from contradicting
	// those tables.
	TablesSeen bool
	// FailedDump and FailedReason name the failed chain or rule dump, for the closing
	// error row when no other backend answers.
	FailedDump, FailedReason string
	// Chains and Rules are the dumped objects, in dump order.
	Chains []NftChain
	Rules  []NftRule
}

// NftChain is one nftables chain.
type NftChain struct {
	Family    uint32
	Table     string
	Name      string
	Base      bool // attached to a hook
	Hook      uint32
	HasPolicy bool
	Policy    uint32
}

// NftRule is one nftables rule; only where it lives and its handle are read.
type NftRule struct {
	Family    uint32
	Table     string
	Chain     string
	Handle    uint64
	HasHandle bool
}

// policyAccept is the verdict number of an accept policy.
const policyAccept = 1

// nftHasContent reports whether the ruleset does anything: any rule at all, or a base
// chain whose policy is something other than accept.
func nftHasContent(chains []NftChain, rules []NftRule) bool {
	if len(rules) > 0 {
		return true
	}
	for _, c := range chains {
		if c.Base && c.HasPolicy && c.Policy != policyAccept {
			return true
		}
	}
	return false
}

// nftRuleRows lists an nftables read that answered: a row per base chain (its hook and
// policy), then a row per rule.
func nftRuleRows(nft NftResult) []rows.Row {
	var out []rows.Row
	for _, c := range nft.Chains {
		if c.Base {
			out = append(out, parse.NftChainRow(c.Family, c.Table, c.Name,
				parse.HookName(c.Family, c.Hook, true), parse.PolicyName(c.Policy, c.HasPolicy)))
		}
	}
	for _, r := range nft.Rules {
		out = append(out, parse.NftRuleRow(r.Family, r.Table, r.Chain, r.Handle, r.HasHandle))
	}
	return out
}
