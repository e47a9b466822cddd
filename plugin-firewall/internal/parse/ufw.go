package parse

import "strings"

// ParseUfwStatus reads the first line of `ufw status` or `ufw status numbered` output:
// exactly "Status: active" is Enabled, exactly "Status: inactive" is Disabled (trailing
// blanks aside), anything else is Unknown. Matching the whole line means "inactive"
// can never read as active, and an error message never reads as either.
func ParseUfwStatus(b []byte) Status {
	first, _, _ := strings.Cut(string(b), "\n")
	switch strings.TrimRight(first, " \t\r") {
	case "Status: active":
		return Enabled
	case "Status: inactive":
		return Disabled
	default:
		return Unknown
	}
}

// UfwRule is one numbered rule of `ufw status numbered`.
type UfwRule struct {
	Index  string // the number between the brackets, spaces removed
	To     string
	Action string // e.g. "ALLOW IN", "DENY OUT"
	From   string
}

// ParseUfwRules reads the rule lines of `ufw status numbered` output.
//
// A rule line starts with "[" and has a closing "]". ufw pads its columns with runs of
// spaces while a single space belongs to a value ("ALLOW IN", "22/tcp (v6)"), so the
// text after the bracket is split on runs of two or more spaces; the first three
// columns are To, Action and From, and a missing column is empty. What follows From
// (the "(out)" marker and a comment) is not part of the row. The status line, the
// header and its underline are not rule lines.
func ParseUfwRules(b []byte) []UfwRule {
	var rules []UfwRule
	for _, line := range lines(b) {
		if !strings.HasPrefix(line, "[") {
			continue
		}
		index, rest, ok := strings.Cut(line[1:], "]")
		if !ok {
			continue
		}
		cols := splitColumns(rest)
		r := UfwRule{Index: strings.Trim(index, " ")}
		for i, dst := range []*string{&r.To, &r.Action, &r.From} {
			if i < len(cols) {
				*dst = cols[i]
			}
		}
		rules = append(rules, r)
	}
	return rules
}

// splitColumns splits s on runs of two or more spaces, dropping empty columns and the
// blanks around each one.
func splitColumns(s string) []string {
	var cols []string
	for {
		i := strings.Index(s, "  ")
		if i < 0 {
			break
		}
		if c := strings.TrimSpace(s[:i]); c != "" {
			cols = append(cols, c)
		}
		s = strings.TrimLeft(s[i:], " ")
	}
	if c := strings.TrimSpace(s); c != "" {
		cols = append(cols, c)
	}
	return cols
}
