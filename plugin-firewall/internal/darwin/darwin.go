// Package darwin reads the two macOS firewalls: the Application Firewall (primary,
// readable without privilege) through socketfilterfw's getters (global state,
// block-all, stealth mode, the per-app list), and the pf packet filter (secondary,
// root only) through pfctl.
//
// Every tool runs through the SDK's bounded runner. The rows are built by pure
// functions from the tools' results, so the whole leg is tested on any OS with
// recorded output; docs/firewall.md describes the rows.
package darwin

import (
	"context"
	"strconv"
	"time"

	"github.com/yuzugo/yuzu/plugin-firewall/internal/parse"
	"github.com/yuzugo/yuzu/sdk/rows"
	"github.com/yuzugo/yuzu/sdk/subprocess"
)

// Tool paths and the bound on each run.
const (
	SocketfilterfwPath = "/usr/libexec/ApplicationFirewall/socketfilterfw"
	PfctlPath          = "/sbin/pfctl"
	ToolTimeout        = 5 * time.Second
)

// Runner runs one bounded subprocess; subprocess.Run is the real one.
type Runner func(ctx context.Context, spec subprocess.Spec) (subprocess.Result, error)

// Reader runs the macOS tools. Every field must be set; New returns the real one.
type Reader struct {
	Run                           Runner
	SocketfilterfwPath, PfctlPath string
	ToolTimeout                   time.Duration
}

// New returns a Reader using the real tools and the bounded runner.
func New() *Reader {
	return &Reader{
		Run:                subprocess.Run,
		SocketfilterfwPath: SocketfilterfwPath,
		PfctlPath:          PfctlPath,
		ToolTimeout:        ToolTimeout,
	}
}

// StateReading holds the tool results the state action is built from.
type StateReading struct {
	GlobalState subprocess.Result // socketfilterfw --getglobalstate
	BlockAll    subprocess.Result // socketfilterfw --getblockall
	StealthMode subprocess.Result // socketfilterfw --getstealthmode
	PfInfo      subprocess.Result // pfctl -s info
	Anchors     subprocess.Result // pfctl -v -s Anchors
	Rules       subprocess.Result // pfctl -s rules
}

// RulesReading holds the tool results the rules action is built from.
type RulesReading struct {
	ListApps subprocess.Result // socketfilterfw --listapps
	Rules    subprocess.Result // pfctl -s rules
	Anchors  subprocess.Result // pfctl -v -s Anchors
}

// anchorsArgs asks pfctl for every anchor, nested ones included. Without -v pfctl
// lists only the top-level anchors, and the tools that load rules put theirs under
// com.apple/, so the plain listing shows "com.apple" and hides what is loaded.
var anchorsArgs = []string{"-v", "-s", "Anchors"}

// State runs the tools for the state action and returns its rows.
func (r *Reader) State(ctx context.Context) []rows.Row {
	return StateRows(StateReading{
		GlobalState: r.runALF(ctx, "--getglobalstate"),
		BlockAll:    r.runALF(ctx, "--getblockall"),
		StealthMode: r.runALF(ctx, "--getstealthmode"),
		PfInfo:      r.run(ctx, false, r.PfctlPath, "-s", "info"),
		Anchors:     r.run(ctx, false, append([]string{r.PfctlPath}, anchorsArgs...)...),
		Rules:       r.run(ctx, false, r.PfctlPath, "-s", "rules"),
	})
}

// Rules runs the tools for the rules action and returns its rows.
func (r *Reader) Rules(ctx context.Context) []rows.Row {
	return RulesRows(RulesReading{
		ListApps: r.runALF(ctx, "--listapps"),
		Rules:    r.run(ctx, false, r.PfctlPath, "-s", "rules"),
		Anchors:  r.run(ctx, false, append([]string{r.PfctlPath}, anchorsArgs...)...),
	})
}

// runALF runs one socketfilterfw getter with stderr in its output: its refusals (the
// managed-Mac sentence, "ALF: Error, ...") must be seen to be reported. pfctl's stderr
// is left out, since it prints ALTQ notices there on every run.
func (r *Reader) runALF(ctx context.Context, arg string) subprocess.Result {
	return r.run(ctx, true, r.SocketfilterfwPath, arg)
}

// run starts one tool; a tool that could not be started reads as one that never ran,
// which every parser turns into unknown or no rows.
func (r *Reader) run(ctx context.Context, mergeStderr bool, argv ...string) subprocess.Result {
	res, err := r.Run(ctx, subprocess.Spec{Argv: argv, Timeout: r.ToolTimeout, MergeStderr: mergeStderr})
	if err != nil {
		return subprocess.Result{ExitCode: -1, Reason: subprocess.ReasonSpawnError}
	}
	return res
}

// verdictOutput is the output a verdict may be read from. The Application Firewall
// and pf status reads do not depend on the exit status (pfctl exits non-zero when not
// root, and its empty output already reads as unknown), but output that was cut short
// by the deadline or the cap is not read at all.
func verdictOutput(res subprocess.Result) []byte {
	if res.TimedOut || res.OutputTruncated {
		return nil
	}
	return res.Output
}

// unread names why a getter's output cannot be read at all (it never ran, was killed,
// hit its deadline or the output cap), or returns false when there is output to read.
func unread(getter string, res subprocess.Result) (parse.Problem, bool) {
	switch {
	case res.TimedOut:
		return parse.Problem(getter + ":timeout"), true
	case res.OutputTruncated:
		return parse.Problem(getter + ":truncated"), true
	case !res.ToolRan:
		return parse.Problem(getter + ":not_run"), true
	case res.Reason != subprocess.ReasonExited:
		return parse.Problem(getter + ":" + string(res.Reason)), true
	}
	return "", false
}

func errorRow(p parse.Problem) rows.Row { return rows.New("error", string(p)) }

// StateRows builds the state rows: the Application Firewall first (backend, state,
// block-all and stealth mode, each followed by an error row when its getter's answer
// was not understood), then pf's status, its anchors and its rule count. The anchors
// and the count are published only from complete reads, so a refused pf read shows no
// anchors and ruleset|unknown rather than a partial answer.
func StateRows(r StateReading) []rows.Row {
	out := []rows.Row{rows.New("backend", "appfirewall")}

	state, p := parse.Unknown, parse.Problem("")
	if up, ok := unread(parse.GetterGlobalState, r.GlobalState); ok {
		p = up
	} else {
		state, p = parse.ParseALFGlobalState(verdictOutput(r.GlobalState))
	}
	out = append(out, rows.New("state", state.String()))
	if p != "" {
		out = append(out, errorRow(p))
	}

	blockAll, p := toggle(parse.GetterBlockAll, r.BlockAll, parse.ParseALFBlockAll)
	if blockAll == parse.ToggleOn {
		out = append(out, rows.New("mode", "block_all"))
	}
	out = append(out, rows.New("block_all", blockAll.String()))
	if p != "" {
		out = append(out, errorRow(p))
	}

	stealth, p := toggle(parse.GetterStealthMode, r.StealthMode, parse.ParseALFStealthMode)
	out = append(out, rows.New("stealth", stealth.String()))
	if p != "" {
		out = append(out, errorRow(p))
	}

	out = append(out, rows.New("pf", parse.ParsePfInfo(verdictOutput(r.PfInfo)).String()))
	out = append(out, anchorRows(r.Anchors)...)
	return append(out, rulesetRow(r.Rules))
}

func toggle(getter string, res subprocess.Result, read func([]byte) (parse.Toggle, parse.Problem)) (parse.Toggle, parse.Problem) {
	if p, ok := unread(getter, res); ok {
		return parse.ToggleUnknown, p
	}
	return read(res.Output)
}

// RulesRows builds the rules rows: the Application Firewall's per-app list and an
// error row for each thing in it that was not understood, then pf's rule lines and
// anchors, then the pf rule count. Each list is published only from a complete read;
// a listapps read that did not complete gives one error row saying why instead.
func RulesRows(r RulesReading) []rows.Row {
	var out []rows.Row
	switch p, ok := unread(parse.GetterListApps, r.ListApps); {
	case ok:
		out = append(out, errorRow(p))
	case r.ListApps.ExitCode != 0:
		out = append(out, errorRow(parse.Problem(parse.GetterListApps+":exit:"+strconv.Itoa(r.ListApps.ExitCode))))
	default:
		l := parse.ParseListApps(r.ListApps.Output)
		for _, a := range l.Apps {
			out = append(out, rows.New("app", rows.Sanitize(a.Path), a.Decision))
		}
		for _, p := range l.Problems {
			out = append(out, errorRow(p))
		}
	}
	if parse.SubprocessComplete(r.Rules) {
		for _, l := range parse.PfRuleLines(r.Rules.Output) {
			out = append(out, rows.New("rule", rows.Sanitize(l)))
		}
	}
	out = append(out, anchorRows(r.Anchors)...)
	return append(out, rulesetRow(r.Rules))
}

func anchorRows(res subprocess.Result) []rows.Row {
	if !parse.SubprocessComplete(res) {
		return nil
	}
	var out []rows.Row
	for _, a := range parse.ParsePfAnchors(res.Output) {
		out = append(out, rows.New("anchor", rows.Sanitize(a)))
	}
	return out
}

func rulesetRow(res subprocess.Result) rows.Row {
	if !parse.SubprocessComplete(res) {
		return rows.New("ruleset", "unknown")
	}
	return rows.New("ruleset", strconv.Itoa(parse.CountPfRules(res.Output)))
}
