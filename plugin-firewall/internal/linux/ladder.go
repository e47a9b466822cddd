package linux

import (
	"context"
	"strconv"
	"time"

	"github.com/yuzugo/yuzu/plugin-firewall/internal/parse"
	"github.com/yuzugo/yuzu/plugin-firewall/internal/row"
	"github.com/yuzugo/yuzu/sdk/subprocess"

	"github.com/yuzugo/yuzu/sdk/rows"
)

// Default bounds of the ladder. Every rung is bounded by about five seconds, so a host
// where every source hangs answers in about twenty; the total is enforced as well so
// that the sum of small overruns can never push the answer later.
const (
	DefaultToolTimeout = 5 * time.Second
	DefaultTotal       = 20 * time.Second
	DefaultUfwPath     = "/usr/sbin/ufw"
	DefaultIptables    = "/usr/sbin/iptables"
)

// Cumulative cut-offs of the three nftables dumps, measured from the start of the
// rung: the table dump must be done by the first, the chain dump by the second, the
// rule dumps by the third. Tables are tiny, so most of the budget goes to rules.
const (
	NftTableBy = 1000 * time.Millisecond
	NftChainBy = 2500 * time.Millisecond
	NftRuleBy  = 5000 * time.Millisecond
)

// Timeouts are the bounds of one walk down the ladder. DefaultTimeouts are the ones
// the plugin uses; tests shrink them to check the worst case in proportion.
type Timeouts struct {
	// Firewalld bounds the whole D-Bus conversation.
	Firewalld time.Duration
	// NftTable, NftChain and NftRule are the cumulative cut-offs of the nftables
	// dumps, from the start of that rung.
	NftTable, NftChain, NftRule time.Duration
	// Tool bounds each run of ufw and of iptables.
	Tool time.Duration
	// Total bounds the whole walk, whatever the rungs' own bounds add up to.
	Total time.Duration
}

// DefaultTimeouts returns the plugin's bounds: five seconds for each of firewalld,
// nftables, ufw and iptables, and twenty for the whole walk.
func DefaultTimeouts() Timeouts {
	return Timeouts{
		Firewalld: FirewalldBudget,
		NftTable:  NftTableBy,
		NftChain:  NftChainBy,
		NftRule:   NftRuleBy,
		Tool:      DefaultToolTimeout,
		Total:     DefaultTotal,
	}
}

// WorstCase is the longest a walk with these bounds can take: the sum of the rungs'
// bounds (nftables counts with its last cut-off), or Total when that is shorter.
func (t Timeouts) WorstCase() time.Duration {
	return min(t.Firewalld+t.NftRule+2*t.Tool, t.Total)
}

// Runner runs one bounded subprocess; subprocess.Run is the real one.
type Runner func(ctx context.Context, spec subprocess.Spec) (subprocess.Result, error)

// Ladder walks the Linux firewall sources in order. Every field must be set; New (on
// Linux) returns one wired to the real sources.
type Ladder struct {
	// Firewalld asks firewalld over D-Bus.
	Firewalld func(ctx context.Context) FirewalldResult
	// Nftables reads the nftables ruleset over netlink.
	Nftables func(ctx context.Context) NftResult
	// Run starts ufw and iptables.
	Run Runner
	// UfwPath and IptablesPath are the absolute paths of the two tools.
	UfwPath, IptablesPath string
	// ToolTimeout bounds each tool run.
	ToolTimeout time.Duration
	// Total bounds the whole walk.
	Total time.Duration
}

// State answers the `state` action: which backend answered, whether it is active, and
// how many rules it holds.
func (l *Ladder) State(ctx context.Context) []row.Row { return l.walk(ctx, false) }

// Rules answers the `rules` action: which backend answered and the rules it lists.
func (l *Ladder) Rules(ctx context.Context) []row.Row { return l.walk(ctx, true) }

func (l *Ladder) walk(ctx context.Context, rules bool) []row.Row {
	ctx, cancel := context.WithTimeout(ctx, l.Total)
	defer cancel()

	if fw := l.Firewalld(ctx); fw.Reachable {
		return firewalldRows(fw, rules)
	}

	nft := l.Nftables(ctx)
	// Error and fallthrough rows are written the moment the read fails, so they stay
	// even when a later backend answers: they say why nftables did not.
	out := append([]row.Row(nil), nft.Diag...)
	if nft.Answered && nft.Tables > 0 {
		return append(out, nftRows(nft, rules)...)
	}
	// A complete read that found no table at all does not settle the question:
	// iptables-legacy keeps its rules in tables nftables cannot see, and ufw on such
	// a host works through it. So ufw and iptables are asked first, and the empty
	// ruleset is the answer only when neither of them answers. Upstream stops here
	// and reports "inactive", which is false on a legacy host holding rules
	// (docs/firewall.md).
	if r, ok := l.ufw(ctx, nft.TablesSeen, rules); ok {
		return append(out, r...)
	}
	if r, ok := l.iptables(ctx, nft.TablesSeen, rules); ok {
		return append(out, r...)
	}
	if nft.Answered {
		return append(out, nftRows(nft, rules)...)
	}
	return append(out, terminalRows(nft, rules)...)
}

// run starts one tool. A tool that could not be started is reported as not run,
// whatever the reason; the error itself is not shown to the user because the rung
// simply does not answer.
func (l *Ladder) run(ctx context.Context, argv ...string) subprocess.Result {
	res, err := l.Run(ctx, subprocess.Spec{Argv: argv, Timeout: l.ToolTimeout})
	if err != nil {
		return subprocess.Result{ExitCode: -1}
	}
	return res
}

// ufw answers only when the tool ran and exited 0: a failure (typically "not root")
// hands over to iptables.
func (l *Ladder) ufw(ctx context.Context, tablesSeen, rules bool) ([]row.Row, bool) {
	res := l.run(ctx, l.UfwPath, "status", "numbered")
	if !res.ToolRan || res.ExitCode != 0 {
		return nil, false
	}
	status := parse.ParseUfwStatus(res.Output)
	// An unrecognised status line means the output is not what this parser knows, so
	// neither its verdict nor its rule lines are trusted.
	trusted := parse.SubprocessComplete(res) && status != parse.Unknown
	list := parse.ParseUfwRules(res.Output)
	return toolRows("ufw", trusted, tablesSeen, rules, status, len(list), func() []row.Row {
		out := make([]row.Row, 0, len(list))
		for _, r := range list {
			out = append(out, row.New("rule", rows.Sanitize(r.Index), rows.Sanitize(r.To),
				rows.Sanitize(r.Action), rows.Sanitize(r.From)))
		}
		return out
	}), true
}

// iptables is the last real backend: once the tool ran, it answers, and a failed or
// unrecognised read is reported as unknown rather than handed on.
func (l *Ladder) iptables(ctx context.Context, tablesSeen, rules bool) ([]row.Row, bool) {
	res := l.run(ctx, l.IptablesPath, "-S")
	if !res.ToolRan {
		return nil, false
	}
	entries := parse.ParseIptables(res.Output)
	status := parse.IptablesState(entries)
	trusted := parse.SubprocessComplete(res) && status != parse.Unknown
	return toolRows("iptables", trusted, tablesSeen, rules, status, parse.IptablesRuleCount(entries), func() []row.Row {
		out := make([]row.Row, 0, len(entries))
		for _, e := range entries {
			out = append(out, row.New("rule", e.Kind, rows.Sanitize(e.Chain), rows.Sanitize(e.Spec)))
		}
		return out
	}), true
}

// toolRows renders what a tool backend (ufw, iptables) answered: for state its gated
// verdict and rule count, for rules its rule rows and count, and unknown for both when
// its read is not trusted.
func toolRows(backend string, trusted, tablesSeen, rules bool, status parse.Status, count int, ruleRows func() []row.Row) []row.Row {
	out := []row.Row{row.New("backend", backend)}
	if !rules {
		out = append(out, row.New("state", parse.GateState(trusted, tablesSeen, status).Activity()))
		if !trusted {
			return append(out, rulesetUnknown())
		}
		return append(out, rulesetCount(count))
	}
	if !trusted {
		return append(out, rulesUnknown(), rulesetUnknown())
	}
	return append(append(out, ruleRows()...), rulesetCount(count))
}

// terminalRows close a walk where no backend answered. When nftables tables were read
// but a later dump failed, nftables is named as the backend with the failure spelled
// out: the host does have a ruleset, it just could not be read whole.
func terminalRows(nft NftResult, rules bool) []row.Row {
	verdict := row.New("state", "unknown")
	if rules {
		verdict = rulesUnknown()
	}
	if nft.TablesSeen {
		return []row.Row{
			row.New("backend", "nftables"),
			verdict,
			parse.NftDiagRow(nft.FailedDump, nft.FailedReason),
			rulesetUnknown(),
		}
	}
	return []row.Row{row.New("backend", "none"), verdict, rulesetUnknown()}
}

func rulesetCount(n int) row.Row { return row.New("ruleset", strconv.Itoa(n)) }
func rulesetUnknown() row.Row    { return row.New("ruleset", "unknown") }
func rulesUnknown() row.Row      { return row.New("rules", "unknown") }
