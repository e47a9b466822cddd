package parse

import "strings"

// ParsePfInfo reads the output of `pfctl -s info`: "Status: Enabled" anywhere is
// enabled, "Status: Disabled" anywhere is disabled, anything else (including the empty
// output of a refused, unprivileged run) is Unknown.
func ParsePfInfo(b []byte) Status {
	text := string(b)
	switch {
	case strings.Contains(text, "Status: Enabled"):
		return Enabled
	case strings.Contains(text, "Status: Disabled"):
		return Disabled
	default:
		return Unknown
	}
}

// ParsePfAnchors reads the output of `pfctl -s Anchors`: one anchor name per line,
// leading blanks removed, blank lines skipped, order kept.
func ParsePfAnchors(b []byte) []string {
	var anchors []string
	for _, line := range lines(b) {
		name := strings.TrimLeft(line, " \t")
		if name != "" {
			anchors = append(anchors, name)
		}
	}
	return anchors
}

// PfRuleLines returns the rule lines of `pfctl -s rules` output: every line that is
// not blank once carriage returns and leading blanks are set aside. The lines are
// returned as pfctl printed them, carriage returns removed.
func PfRuleLines(b []byte) []string {
	var rules []string
	for _, line := range lines(b) {
		if strings.TrimLeft(line, " \t") != "" {
			rules = append(rules, line)
		}
	}
	return rules
}

// CountPfRules is the number of rule lines in `pfctl -s rules` output, as counted by
// PfRuleLines.
func CountPfRules(b []byte) int {
	return len(PfRuleLines(b))
}
