// Package darwin reads the two macOS firewalls: the Application Firewall (primary,
// readable without privilege) through socketfilterfw, and the pf packet filter
// (secondary, root only) through pfctl.
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
	PfInfo      subprocess.Result // pfctl -s info
	Anchors     subprocess.Result // pfctl -s Anchors
	Rules       subprocess.Result // pfctl -s rules
}

// RulesReading holds the tool results the rules action is built from.
type RulesReading struct {
	ListApps subprocess.Result // socketfilterfw --listapps
	Rules    subprocess.Result // pfctl -s rules
	Anchors  subprocess.Result // pfctl -s Anchors
}

// State runs the tools for the state action and returns its rows.
func (r *Reader) State(ctx context.Context) []rows.Row {
	return StateRows(StateReading{
		GlobalState: r.run(ctx, r.SocketfilterfwPath, "--getglobalstate"),
		PfInfo:      r.run(ctx, r.PfctlPath, "-s", "info"),
		Anchors:     r.run(ctx, r.PfctlPath, "-s", "Anchors"),
		Rules:       r.run(ctx, r.PfctlPath, "-s", "rules"),
	})
}

// Rules runs the tools for the rules action and returns its rows.
func (r *Reader) Rules(ctx context.Context) []rows.Row {
	return RulesRows(RulesReading{
		ListApps: r.run(ctx, r.SocketfilterfwPath, "--listapps"),
		Rules:    r.run(ctx, r.PfctlPath, "-s", "rules"),
		Anchors:  r.run(ctx, r.PfctlPath, "-s", "Anchors"),
	})
}

// run starts one tool; a tool that could not be started reads as one that ran and
// printed nothing, which every parser turns into unknown or no rows.
func (r *Reader) run(ctx context.Context, argv ...string) subprocess.Result {
	res, err := r.Run(ctx, subprocess.Spec{Argv: argv, Timeout: r.ToolTimeout})
	if err != nil {
		return subprocess.Result{ExitCode: -1}
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

// StateRows builds the state rows: the Application Firewall first (backend, state and
// block-all mode), then pf's status, its anchors and its rule count. The anchors and
// the count are published only from complete reads, so a refused pf read shows no
// anchors and ruleset|unknown rather than a partial answer.
func StateRows(r StateReading) []rows.Row {
	state, blockAll := parse.ParseALFGlobalState(verdictOutput(r.GlobalState))
	out := []rows.Row{rows.New("backend", "appfirewall"), rows.New("state", state.String())}
	if blockAll {
		out = append(out, rows.New("mode", "block_all"))
	}
	out = append(out, rows.New("pf", parse.ParsePfInfo(verdictOutput(r.PfInfo)).String()))
	out = append(out, anchorRows(r.Anchors)...)
	return append(out, rulesetRow(r.Rules))
}

// RulesRows builds the rules rows: the Application Firewall's per-app list, then pf's
// rule lines and anchors, then the pf rule count. Each list is published only from a
// complete read.
func RulesRows(r RulesReading) []rows.Row {
	var out []rows.Row
	if parse.SubprocessComplete(r.ListApps) {
		for _, a := range parse.ParseListApps(r.ListApps.Output) {
			out = append(out, rows.New("app", rows.Sanitize(a.Path), a.Decision))
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
