package parse

import "strings"

// stateClause introduces the numeric state in `socketfilterfw --getglobalstate`
// output, e.g. "Firewall is enabled. (State = 1)".
const stateClause = "(State = "

// ParseALFGlobalState reads the output of `socketfilterfw --getglobalstate`.
//
// The numeric clause wins when it holds exactly one digit 0, 1 or 2: 0 is disabled,
// 1 enabled, 2 enabled with block-all (the only way blockAll is ever set). Anything
// else there (another digit, a longer or negative number, a cut-off clause) falls back
// to the prose: "disabled" anywhere reads disabled, else "enabled" anywhere reads
// enabled, else the answer is Unknown. "disabled" is checked first so text that
// mentions both never reads as on.
func ParseALFGlobalState(b []byte) (s Status, blockAll bool) {
	text := string(b)
	if i := strings.Index(text, stateClause); i >= 0 {
		rest := text[i+len(stateClause):]
		if len(rest) >= 1 && isDigit(rest[0]) && (len(rest) == 1 || !isDigit(rest[1])) {
			switch rest[0] {
			case '0':
				return Disabled, false
			case '1':
				return Enabled, false
			case '2':
				return Enabled, true
			}
		}
	}
	switch {
	case strings.Contains(text, "disabled"):
		return Disabled, false
	case strings.Contains(text, "enabled"):
		return Enabled, false
	default:
		return Unknown, false
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// App is one entry of the Application Firewall's per-app list.
type App struct {
	// Path is the executable's path as socketfilterfw printed it, trailing spaces
	// removed.
	Path string
	// Decision is "allow", "block" or "unknown".
	Decision string
}

// ParseListApps reads the output of `socketfilterfw --listapps`.
//
// An app line is "N : <path>" where N is all digits; the line after it says what the
// firewall does for that app. Exactly "(Allow incoming connections)" is allow, exactly
// "(Block incoming connections)" is block, and any other wording is kept as unknown
// rather than guessed. An app line followed by another app line, or by the end of the
// output, is kept as unknown too. Lines before the first app line (the total count)
// are ignored.
func ParseListApps(b []byte) []App {
	var apps []App
	var pending *App
	commit := func(decision string) {
		pending.Decision = decision
		apps = append(apps, *pending)
		pending = nil
	}
	for _, line := range lines(b) {
		if path, ok := appLine(line); ok {
			if pending != nil {
				commit("unknown")
			}
			pending = &App{Path: path}
			continue
		}
		if pending == nil {
			continue
		}
		switch strings.Trim(line, " \t") {
		case "(Allow incoming connections)":
			commit("allow")
		case "(Block incoming connections)":
			commit("block")
		default:
			commit("unknown")
		}
	}
	if pending != nil {
		commit("unknown")
	}
	return apps
}

// appLine reports whether line is "N : <path>" with N all digits, and returns the path
// with trailing spaces removed.
func appLine(line string) (string, bool) {
	num, path, ok := strings.Cut(line, " : ")
	if !ok || num == "" {
		return "", false
	}
	for i := 0; i < len(num); i++ {
		if !isDigit(num[i]) {
			return "", false
		}
	}
	return strings.TrimRight(path, " "), true
}
