// Package parse turns the text and values the firewall tools hand back into verdicts,
// with no I/O of its own.
//
// Every function here is pure: bytes or plain values in, plain values out. The one rule
// they all keep is the honest-status rule described in docs/firewall.md: output that is
// empty, truncated or not recognised never becomes "disabled", "inactive" or an empty
// rule list; it becomes Unknown, and the caller reports the rule count as unknown.
package parse
