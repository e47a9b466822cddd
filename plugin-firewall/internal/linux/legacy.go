package linux

import (
	"github.com/yuzugo/yuzu/plugin-firewall/internal/parse"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// The legacy tables are the kernel's x_tables, which iptables-legacy writes and which
// nftables cannot see. The kernel lists each family's tables in a file under
// /proc/<task>/net, so whether any exist is known without running a tool, and without
// creating one: iptables-legacy creates the filter table on its first use, even for a
// listing, while iptables-save reads that file and dumps only the tables it names.
const (
	familyIPv4 = 2  // NFPROTO_IPV4, named ip
	familyIPv6 = 10 // NFPROTO_IPV6, named ip6
)

// LegacyFamily is what was learned about one family's legacy tables.
type LegacyFamily struct {
	Family uint32
	// Read is true when the kernel's list was read and every table on it was dumped
	// whole (trivially so when the list is empty).
	Read bool
	// Listed are the tables the kernel lists; Tables the dumped ones, in dump order.
	Listed []string
	Tables []parse.IptTable
}

// LegacyResult is what the legacy reader learned about both families.
type LegacyResult struct {
	// Diag holds an error row per family that could not be read whole, written
	// whatever else answers.
	Diag     []rows.Row
	Families []LegacyFamily
}

// Complete reports whether every family was read whole.
func (r LegacyResult) Complete() bool {
	for _, f := range r.Families {
		if !f.Read {
			return false
		}
	}
	return true
}

// HasTables reports whether the kernel lists any legacy table, read or not.
func (r LegacyResult) HasTables() bool {
	for _, f := range r.Families {
		if len(f.Listed) > 0 {
			return true
		}
	}
	return false
}

// HasContent reports whether a table that was read does anything.
func (r LegacyResult) HasContent() bool {
	for _, f := range r.Families {
		for _, t := range f.Tables {
			if parse.IptablesHasContent(t.Entries) {
				return true
			}
		}
	}
	return false
}

// RuleCount is the number of rules in the tables that were read.
func (r LegacyResult) RuleCount() int {
	n := 0
	for _, f := range r.Families {
		for _, t := range f.Tables {
			n += parse.IptablesRuleCount(t.Entries)
		}
	}
	return n
}

// rows renders every entry of the families that were read whole.
func (r LegacyResult) rows() []rows.Row {
	var out []rows.Row
	for _, f := range r.Families {
		if !f.Read {
			continue
		}
		for _, t := range f.Tables {
			for _, e := range t.Entries {
				out = append(out, parse.IptRow(f.Family, t.Name, e))
			}
		}
	}
	return out
}

// legacyDiagRow is the row naming a family that could not be read whole:
// error|iptables:<family>:<reason>.
func legacyDiagRow(family uint32, reason string) rows.Row {
	return rows.New("error", "iptables:"+parse.FamilyName(family)+":"+reason)
}

// Reasons a legacy family could not be read, as they appear in its error row (beside
// the nftables tokens timeout, eperm, io_error and oversized, which mean the same).
const (
	reasonNoTool       = "no_tool"
	reasonTruncated    = "truncated"
	reasonUnrecognised = "unrecognised"
	reasonExitPrefix   = "exit:"
	reasonMissing      = "missing:"
)
