package parse

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// The Application Firewall's command-line tool, socketfilterfw, answers in English
// sentences that Apple has reworded across releases. Every reader here knows a fixed
// list of sentences (docs/firewall.md lists them with the releases they were seen on)
// and answers Unknown plus a Problem for anything else, so a new wording is reported
// instead of guessed at.

// Problem names what a reader could not understand, as the text after "error|" in a
// row: "<getter>:<reason>" or "<getter>:<reason>:<detail>". The detail is the
// wording that was not understood, folded to one line and cut to maxDetail bytes.
type Problem string

// maxDetail bounds the quoted wording in a Problem, so a tool that floods one line
// cannot make the error row larger than the answer.
const maxDetail = 120

// Getter names, as the first part of a Problem.
const (
	GetterGlobalState = "globalstate"
	GetterBlockAll    = "blockall"
	GetterStealthMode = "stealthmode"
	GetterListApps    = "listapps"
)

// managedRefusal is what socketfilterfw prints instead of an answer on a Mac whose
// firewall settings come from a configuration profile.
const managedRefusal = "firewall settings cannot be modified from command line on managed mac computers"

// alfErrorPrefix opens the error sentences socketfilterfw prints when it cannot read
// its own preferences, e.g. "ALF: Error, kStealthEnableKey does not return the
// correct type."
const alfErrorPrefix = "alf: error"

func problem(getter, reason string) Problem { return Problem(getter + ":" + reason) }

func problemDetail(getter, reason, detail string) Problem {
	return Problem(getter + ":" + reason + ":" + shortDetail(detail))
}

// shortDetail folds a wording to one line (CR, LF and tabs become spaces, runs of
// blanks one space, '|' becomes '_' as every row field folds it) and cuts it to
// maxDetail bytes without splitting a UTF-8 sequence.
func shortDetail(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "|", "_")
	if len(s) <= maxDetail {
		return s
	}
	cut := maxDetail
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// normSentence is the form sentences are compared in: blanks collapsed, lower case,
// trailing full stops and exclamation marks removed. Apple has changed punctuation and
// capitals between releases ("Block all DISABLED!") without changing meaning.
func normSentence(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(s), " "))
	return strings.TrimRight(s, ".! ")
}

// commonProblem recognises the answers every getter may give instead of its own
// sentence: nothing at all, the managed-Mac refusal and ALF's own error sentences.
func commonProblem(getter string, b []byte) (Problem, bool) {
	text := strings.TrimSpace(strings.ReplaceAll(string(b), "\r", ""))
	n := normSentence(text)
	switch {
	case text == "":
		return problem(getter, "empty"), true
	case strings.Contains(n, managedRefusal):
		return problem(getter, "managed"), true
	case strings.HasPrefix(n, alfErrorPrefix):
		return problemDetail(getter, "alf_error", text), true
	}
	return "", false
}

// stateClause introduces the numeric state in `socketfilterfw --getglobalstate`
// output, e.g. "Firewall is enabled. (State = 1)".
const stateClause = "(State = "

// ParseALFGlobalState reads the output of `socketfilterfw --getglobalstate`.
//
// The numeric clause wins when it holds exactly one digit 0, 1 or 2: 0 is disabled, 1
// and 2 enabled (2 is the state the firewall reports with block-all, but whether
// block-all is on is read from --getblockall, not from here). Anything else there
// (another digit, a longer or negative number, a cut-off clause) falls back to the
// prose: "disabled" anywhere reads disabled, else "enabled" anywhere reads enabled.
// "disabled" is checked first so text that mentions both never reads as on. What
// matches none of this is Unknown with a Problem naming the text.
func ParseALFGlobalState(b []byte) (Status, Problem) {
	if p, ok := commonProblem(GetterGlobalState, b); ok {
		return Unknown, p
	}
	text := string(b)
	if i := strings.Index(text, stateClause); i >= 0 {
		rest := text[i+len(stateClause):]
		if len(rest) >= 1 && isDigit(rest[0]) && (len(rest) == 1 || !isDigit(rest[1])) {
			switch rest[0] {
			case '0':
				return Disabled, ""
			case '1', '2':
				return Enabled, ""
			}
		}
	}
	switch {
	case strings.Contains(text, "disabled"):
		return Disabled, ""
	case strings.Contains(text, "enabled"):
		return Enabled, ""
	}
	return Unknown, problemDetail(GetterGlobalState, "unrecognized", text)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// Toggle is the answer of an on/off getter.
type Toggle int

// Toggle values; the zero value is ToggleUnknown.
const (
	ToggleUnknown Toggle = iota
	ToggleOn
	ToggleOff
)

// String returns "on", "off" or "unknown".
func (t Toggle) String() string {
	switch t {
	case ToggleOn:
		return "on"
	case ToggleOff:
		return "off"
	}
	return "unknown"
}

// The sentences of `socketfilterfw --getblockall`, normalised by normSentence.
// "Firewall is set to block all ..." is the older wording; "Firewall is blocking all
// ..." is the sentence current releases print for global state 2 and is accepted
// here because it can only mean block-all is on.
var blockAllSentences = map[string]Toggle{
	"block all enabled":                                               ToggleOn,
	"block all disabled":                                              ToggleOff,
	"firewall has block all state set to enabled":                     ToggleOn,
	"firewall has block all state set to disabled":                    ToggleOff,
	"firewall is set to block all non-essential incoming connections": ToggleOn,
	"firewall is blocking all non-essential incoming connections":     ToggleOn,
}

// The sentences of `socketfilterfw --getstealthmode`, normalised by normSentence.
var stealthSentences = map[string]Toggle{
	"stealth mode enabled":         ToggleOn,
	"stealth mode disabled":        ToggleOff,
	"firewall stealth mode is on":  ToggleOn,
	"firewall stealth mode is off": ToggleOff,
}

// ParseALFBlockAll reads the output of `socketfilterfw --getblockall`.
func ParseALFBlockAll(b []byte) (Toggle, Problem) {
	return parseToggle(GetterBlockAll, blockAllSentences, b)
}

// ParseALFStealthMode reads the output of `socketfilterfw --getstealthmode`.
func ParseALFStealthMode(b []byte) (Toggle, Problem) {
	return parseToggle(GetterStealthMode, stealthSentences, b)
}

// parseToggle reads a getter whose whole answer is one known sentence. Two sentences,
// one known and one not, or two known ones that disagree, are not one answer and read
// as unknown.
func parseToggle(getter string, sentences map[string]Toggle, b []byte) (Toggle, Problem) {
	if p, ok := commonProblem(getter, b); ok {
		return ToggleUnknown, p
	}
	answer := ToggleUnknown
	for _, line := range lines(b) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		t, ok := sentences[normSentence(line)]
		if !ok {
			return ToggleUnknown, problemDetail(getter, "unrecognized", line)
		}
		if answer != ToggleUnknown && answer != t {
			return ToggleUnknown, problemDetail(getter, "contradictory", string(b))
		}
		answer = t
	}
	return answer, ""
}

// App is one entry of the Application Firewall's per-app list.
type App struct {
	// Path is the entry as socketfilterfw printed it (a path, or the name the
	// "(state: N)" wording shows), blanks around it removed.
	Path string
	// Decision is "allow", "block" or "unknown".
	Decision string
}

// ListApps is what ParseListApps read.
type ListApps struct {
	Apps []App
	// Problems name every line, decision and count that was not understood, in the
	// order found; an app whose decision was not understood is still listed, as
	// unknown.
	Problems []Problem
}

// maxListProblems caps the problems one listing reports; the last one says how many
// more there were, so junk output cannot flood the rows.
const maxListProblems = 20

// ParseListApps reads the output of `socketfilterfw --listapps`. Two layouts are
// known (docs/firewall.md quotes both):
//
//   - numbered: an app line "N : <path>" (one or more blanks after the colon), then a
//     line holding the decision in parentheses, "(Allow incoming connections)" or
//     "(Block incoming connections)", with any blanks inside and around them;
//   - one line per app: "<name> (state: N)", where 1 is allow and 4 is block.
//
// Either may be preceded by a header "Total number of apps = N" (also "ALF: total
// number of apps = N"). A decision in any other wording, or a state number other than
// 1 or 4, keeps the app as unknown and adds a Problem; an app line with no decision
// line after it is unknown too. A non-blank line that is none of these is a Problem,
// and so is a header whose count differs from the apps read, so a listing that was
// not understood never reads as a short or empty list. Output with neither a header
// nor an app is a Problem as well: the tool always prints the header.
func ParseListApps(b []byte) ListApps {
	var out ListApps
	var pending *App
	dropped := 0
	report := func(p Problem) {
		if len(out.Problems) < maxListProblems-1 {
			out.Problems = append(out.Problems, p)
		} else {
			dropped++
		}
	}
	commit := func(decision string) {
		pending.Decision = decision
		out.Apps = append(out.Apps, *pending)
		pending = nil
	}
	announced, header := -1, false
	for _, line := range lines(b) {
		trimmed := strings.Trim(line, " \t")
		if trimmed == "" {
			continue
		}
		if n, ok := listAppsHeader(trimmed); ok && !header && pending == nil && len(out.Apps) == 0 {
			announced, header = n, true
			continue
		}
		if path, ok := appLine(trimmed); ok {
			if pending != nil {
				commit("unknown")
				report(problemDetail(GetterListApps, "no_decision", out.Apps[len(out.Apps)-1].Path))
			}
			pending = &App{Path: path}
			continue
		}
		if name, state, ok := stateLine(trimmed); ok {
			if pending != nil {
				commit("unknown")
				report(problemDetail(GetterListApps, "no_decision", out.Apps[len(out.Apps)-1].Path))
			}
			decision := "unknown"
			switch state {
			case "1":
				decision = "allow"
			case "4":
				decision = "block"
			default:
				report(problemDetail(GetterListApps, "state", name+" (state: "+state+")"))
			}
			out.Apps = append(out.Apps, App{Path: name, Decision: decision})
			continue
		}
		if pending != nil {
			if d, ok := decisionLine(trimmed); ok {
				commit(d)
				continue
			}
			path := pending.Path
			commit("unknown")
			report(problemDetail(GetterListApps, "decision", path+": "+trimmed))
			continue
		}
		if p, ok := commonProblem(GetterListApps, []byte(trimmed)); ok {
			report(p)
			continue
		}
		report(problemDetail(GetterListApps, "line", trimmed))
	}
	if pending != nil {
		commit("unknown")
		report(problemDetail(GetterListApps, "no_decision", out.Apps[len(out.Apps)-1].Path))
	}
	switch {
	case header && announced != len(out.Apps):
		report(problem(GetterListApps, "count:"+strconv.Itoa(announced)+":"+strconv.Itoa(len(out.Apps))))
	case !header && len(out.Apps) == 0 && len(out.Problems) == 0 && dropped == 0:
		report(problem(GetterListApps, "empty"))
	}
	if dropped > 0 {
		out.Problems = append(out.Problems, problem(GetterListApps, "more:"+strconv.Itoa(dropped)))
	}
	return out
}

// listAppsHeader reads "Total number of apps = N", with or without an "ALF:" prefix,
// in any case.
func listAppsHeader(line string) (int, bool) {
	l := strings.ToLower(line)
	l = strings.TrimPrefix(l, "alf:")
	l = strings.TrimSpace(l)
	rest, ok := strings.CutPrefix(l, "total number of apps")
	if !ok {
		return 0, false
	}
	rest, ok = strings.CutPrefix(strings.TrimSpace(rest), "=")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(rest))
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// appLine reports whether line (already trimmed) is "N : <path>" with N all digits,
// and returns the path with the blanks around it removed.
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
	path = strings.Trim(path, " \t")
	return path, path != ""
}

// stateLine reads "<name> (state: N)" with N all digits.
func stateLine(line string) (name, state string, ok bool) {
	body, ok := strings.CutSuffix(line, ")")
	if !ok {
		return "", "", false
	}
	i := strings.LastIndex(body, "(state:")
	if i < 0 {
		return "", "", false
	}
	state = strings.TrimSpace(body[i+len("(state:"):])
	name = strings.Trim(body[:i], " \t")
	if name == "" || state == "" {
		return "", "", false
	}
	for j := 0; j < len(state); j++ {
		if !isDigit(state[j]) {
			return "", "", false
		}
	}
	return name, state, true
}

// decisionLine reads a parenthesised decision, blanks inside ignored and words
// compared exactly: "(Allow incoming connections)" and "( Block incoming connections
// )" are known, anything else is not.
func decisionLine(line string) (string, bool) {
	inner, ok := strings.CutPrefix(line, "(")
	if !ok {
		return "", false
	}
	inner, ok = strings.CutSuffix(inner, ")")
	if !ok {
		return "", false
	}
	switch strings.Join(strings.Fields(inner), " ") {
	case "Allow incoming connections":
		return "allow", true
	case "Block incoming connections":
		return "block", true
	}
	return "", false
}
