package parse

import "strings"

// Kinds of `iptables -S` entries, as they appear in rule rows.
const (
	IptPolicy   = "policy"
	IptNewChain = "new_chain"
	IptAppend   = "append"
	IptUnknown  = "unknown"
)

// IptEntry is one line of `iptables -S` output.
type IptEntry struct {
	Kind  string // IptPolicy, IptNewChain, IptAppend or IptUnknown
	Chain string
	// Spec is the policy target for -P, empty for -N, the rule text after the chain
	// for -A, and the whole line for anything else.
	Spec string
}

// ParseIptables reads `iptables -S` output line by line, blank lines skipped. The
// first word decides the kind: -P is a chain policy (chain, then target), -N a
// user-defined chain, -A a rule (chain, then the rest of the line); any other line is
// kept whole as unknown so nothing the tool printed is dropped.
func ParseIptables(b []byte) []IptEntry {
	var entries []IptEntry
	for _, line := range lines(b) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		op, rest := nextWord(line)
		chain, after := nextWord(rest)
		switch op {
		case "-P":
			target, _ := nextWord(after)
			entries = append(entries, IptEntry{Kind: IptPolicy, Chain: chain, Spec: target})
		case "-N":
			entries = append(entries, IptEntry{Kind: IptNewChain, Chain: chain})
		case "-A":
			entries = append(entries, IptEntry{Kind: IptAppend, Chain: chain, Spec: strings.TrimLeft(after, " \t")})
		default:
			entries = append(entries, IptEntry{Kind: IptUnknown, Spec: line})
		}
	}
	return entries
}

// nextWord returns the first blank-separated word of s and the text after it.
func nextWord(s string) (word, rest string) {
	s = strings.TrimLeft(s, " \t")
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

// IptablesState is the verdict of an `iptables -S` listing. A listing with no policy
// line is not one iptables produces (it always prints the built-in chains' policies),
// so it is Unknown. Otherwise the host is active when any policy is not ACCEPT or
// anything besides policies exists (a user chain, a rule or an unrecognised line), and
// inactive only when every entry is an ACCEPT policy.
func IptablesState(entries []IptEntry) Status {
	sawPolicy, content := false, false
	for _, e := range entries {
		if e.Kind == IptPolicy {
			sawPolicy = true
			if e.Spec != "ACCEPT" {
				content = true
			}
			continue
		}
		content = true
	}
	switch {
	case !sawPolicy:
		return Unknown
	case content:
		return Enabled
	default:
		return Disabled
	}
}

// IptablesRuleCount is the number of -A entries, the count reported as the ruleset
// size.
func IptablesRuleCount(entries []IptEntry) int {
	n := 0
	for _, e := range entries {
		if e.Kind == IptAppend {
			n++
		}
	}
	return n
}
