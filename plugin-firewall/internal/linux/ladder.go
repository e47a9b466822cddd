package linux

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/yuzugo/yuzu/plugin-firewall/internal/parse"
	"github.com/yuzugo/yuzu/plugin-firewall/internal/trace"
	"github.com/yuzugo/yuzu/sdk/rows"
	"github.com/yuzugo/yuzu/sdk/subprocess"
)

// Default bounds of the ladder. Every rung is bounded by about five seconds, so a host
// where every source hangs answers in about twenty; the total is enforced as well so
// that the sum of small overruns can never push the answer later.
const (
	DefaultToolTimeout = 5 * time.Second
	DefaultTotal       = 20 * time.Second
	DefaultUfwPath     = "/usr/sbin/ufw"
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
	// Tool bounds the run of ufw, and the legacy iptables reads (both families
	// together).
	Tool time.Duration
	// Total bounds the whole walk, whatever the rungs' own bounds add up to.
	Total time.Duration
}

// DefaultTimeouts returns the plugin's bounds: five seconds for each of firewalld,
// nftables, ufw and the legacy iptables tables, and twenty for the whole walk.
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
// bounds (nftables counts with its last cut-off, ufw and the legacy tables with one
// tool bound each), or Total when that is shorter.
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
	// Legacy reads the legacy iptables tables of both families.
	Legacy func(ctx context.Context) LegacyResult
	// Run starts ufw.
	Run Runner
	// UfwPath is the absolute path of ufw.
	UfwPath string
	// ToolTimeout bounds the ufw run.
	ToolTimeout time.Duration
	// Total bounds the whole walk.
	Total time.Duration
}

// State answers the `state` action: which backend answered, whether it is active, and
// how many rules it holds.
func (l *Ladder) State(ctx context.Context) []rows.Row { return l.walk(ctx, false) }

// Rules answers the `rules` action: which backend answered and the rules it lists.
func (l *Ladder) Rules(ctx context.Context) []rows.Row { return l.walk(ctx, true) }

// walk asks the sources in order. firewalld, when it runs, answers for the host. Else
// the kernel answers: nftables and the legacy iptables tables are both read, because
// each holds rules the other cannot see, and the answer is their union. ufw is asked
// only when nftables holds no table (on such a host ufw works through
// iptables-legacy); when it says it is on, it answers with its own list, and when it
// says it is off (or says something unreadable) that is believed only if the kernel
// holds nothing that filters (docs/firewall.md).
func (l *Ladder) walk(ctx context.Context, rules bool) []rows.Row {
	ctx, cancel := context.WithTimeout(ctx, l.Total)
	defer cancel()
	// Every rung tried is logged at debug with what it found, so that
	// `--log-level debug` shows the whole detection path.
	log := trace.From(ctx)
	tried := func(backend, outcome string, args ...any) {
		log.Debug("firewall backend tried", append([]any{"backend", backend, "outcome", outcome}, args...)...)
	}
	chose := func(out []rows.Row, why string) []rows.Row {
		var names []string
		for _, r := range out {
			if r.Kind == "backend" && len(r.Fields) > 0 {
				names = append(names, r.Fields[0])
			}
		}
		log.Debug("firewall backend chosen", "backend", strings.Join(names, "+"), "why", why)
		return out
	}

	fw := l.Firewalld(ctx)
	if fw.Reachable {
		tried("firewalld", "answers", "zones", len(fw.Zones), "policies", len(fw.Policies), "complete", fw.Complete)
		return chose(firewalldRows(fw, rules), "firewalld runs and answers for the host")
	}
	tried("firewalld", "rejected: not reachable", "reason", fw.Why)

	// Error rows are written the moment a read fails, so they stay whatever answers
	// later: they say what could not be seen.
	nft := l.Nftables(ctx)
	out := append([]rows.Row(nil), nft.Diag...)
	logNft(tried, nft)
	if nft.Answered && nft.Tables > 0 {
		k := kernel{nft: nft, legacy: l.Legacy(ctx)}
		logLegacy(tried, k.legacy)
		tried("ufw", "not asked: nftables holds tables, so ufw's rules are among them")
		return chose(append(append(out, k.legacy.Diag...), k.rows(rules)...), "the kernel's rule stores (nftables holds tables)")
	}

	u := l.ufw(ctx)
	if u.answered && u.trusted && u.status == parse.Enabled {
		tried("ufw", "answers: active", "rules", len(u.list))
		tried("iptables", "not read: ufw is active and lists its rules")
		return chose(append(out, u.rows(rules, false)...), "nftables holds no table and ufw is active")
	}
	if !u.answered {
		tried("ufw", "rejected: did not answer", "reason", u.why)
	} else {
		tried("ufw", "says "+u.verdict()+"; believed only if the kernel holds nothing that filters", "trusted", u.trusted)
	}
	k := kernel{nft: nft, legacy: l.Legacy(ctx)}
	logLegacy(tried, k.legacy)
	if u.answered && !k.hasContent() {
		// ufw's "off" stands when the kernel holds nothing that filters; when the
		// kernel could not be read whole it becomes unknown.
		return chose(append(append(out, k.legacy.Diag...), u.rows(rules, !k.complete())...), "ufw answered and the kernel holds nothing that filters")
	}
	if u.answered {
		out = append(out, rows.New("fallthrough", "ufw:"+u.verdict()))
	}
	return chose(append(append(out, k.legacy.Diag...), k.rows(rules)...), "the kernel's rule stores")
}

// logNft says what the nftables read found.
func logNft(tried func(string, string, ...any), nft NftResult) {
	switch {
	case nft.Absent:
		tried("nftables", "rejected: the kernel has no nf_tables")
	case nft.Answered && nft.Tables > 0:
		tried("nftables", "answers", "tables", nft.Tables, "chains", len(nft.Chains), "rules", len(nft.Rules))
	case nft.Answered:
		tried("nftables", "read whole, no table")
	default:
		tried("nftables", "rejected: not read whole", "tables_seen", nft.TablesSeen, "failed", diagText(nft.Diag))
	}
}

// logLegacy says what the read of the legacy iptables tables found.
func logLegacy(tried func(string, string, ...any), legacy LegacyResult) {
	switch {
	case !legacy.Complete():
		tried("iptables", "not read whole", "has_tables", legacy.HasTables(), "failed", diagText(legacy.Diag))
	case legacy.HasTables():
		tried("iptables", "answers: the legacy tables are read", "filters", legacy.HasContent())
	default:
		tried("iptables", "read whole, no legacy table")
	}
}

// diagText joins error rows for a log field.
func diagText(rs []rows.Row) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		parts = append(parts, strings.Join(append([]string{r.Kind}, r.Fields...), "|"))
	}
	return strings.Join(parts, "; ")
}

// ufwAnswer is what `ufw status numbered` said.
type ufwAnswer struct {
	// answered is true when ufw ran and exited 0; a failure (typically "not root")
	// leaves the question to the kernel.
	answered bool
	// trusted is true when the output was whole and its status line recognised;
	// otherwise neither the verdict nor the rule lines are believed.
	trusted bool
	status  parse.Status
	list    []parse.UfwRule
	// why says, when not answered, what failed (for the debug log).
	why string
}

func (l *Ladder) ufw(ctx context.Context) ufwAnswer {
	res, err := l.Run(ctx, subprocess.Spec{Argv: []string{l.UfwPath, "status", "numbered"}, Timeout: l.ToolTimeout})
	switch {
	case err != nil:
		return ufwAnswer{why: err.Error()}
	case !res.ToolRan:
		return ufwAnswer{why: l.UfwPath + " did not run: " + string(res.Reason)}
	case res.ExitCode != 0:
		return ufwAnswer{why: l.UfwPath + " exited " + strconv.Itoa(res.ExitCode)}
	}
	status := parse.ParseUfwStatus(res.Output)
	return ufwAnswer{
		answered: true,
		trusted:  parse.SubprocessComplete(res) && status != parse.Unknown,
		status:   status,
		list:     parse.ParseUfwRules(res.Output),
	}
}

// verdict is ufw's own verdict as a Linux state word.
func (u ufwAnswer) verdict() string {
	return parse.GateState(u.trusted, false, u.status).Activity()
}

// rows renders ufw's answer: for state its verdict and rule count, for rules its rule
// rows and count, and unknown for both when its output is not trusted. clamp turns an
// "inactive" into unknown, for a kernel that could not be read whole.
func (u ufwAnswer) rows(rules, clamp bool) []rows.Row {
	out := []rows.Row{rows.New("backend", "ufw")}
	if !rules {
		out = append(out, rows.New("state", parse.GateState(u.trusted, clamp, u.status).Activity()))
		if !u.trusted {
			return append(out, rulesetUnknown())
		}
		return append(out, rulesetCount(len(u.list)))
	}
	if !u.trusted {
		return append(out, rulesUnknown(), rulesetUnknown())
	}
	for _, r := range u.list {
		out = append(out, rows.New("rule", rows.Sanitize(r.Index), rows.Sanitize(r.To),
			rows.Sanitize(r.Action), rows.Sanitize(r.From)))
	}
	return append(out, rulesetCount(len(u.list)))
}

// kernel is what the kernel's two rule stores held: nftables (native tables and
// those of iptables-nft) and the legacy iptables tables.
type kernel struct {
	nft    NftResult
	legacy LegacyResult
}

// complete reports whether both stores were read whole. A kernel without nf_tables
// at all counts as read: it can hold no nftables rule.
func (k kernel) complete() bool {
	return (k.nft.Answered || k.nft.Absent) && k.legacy.Complete()
}

// hasContent reports whether anything that was read filters.
func (k kernel) hasContent() bool {
	return (k.nft.Answered && nftHasContent(k.nft.Chains, k.nft.Rules)) || k.legacy.HasContent()
}

// backends names the stores that hold tables, read or not. When neither does, the
// store that was read whole answers (nftables first); when neither was, none did.
func (k kernel) backends() []string {
	var b []string
	if (k.nft.Answered && k.nft.Tables > 0) || k.nft.TablesSeen {
		b = append(b, "nftables")
	}
	if k.legacy.HasTables() {
		b = append(b, "iptables")
	}
	switch {
	case len(b) > 0:
		return b
	case k.nft.Answered:
		return []string{"nftables"}
	case k.legacy.Complete():
		return []string{"iptables"}
	}
	return []string{"none"}
}

// rows renders the kernel's answer. The verdict is the union's: active when anything
// read filters, inactive only when both stores were read whole and nothing filters,
// unknown otherwise. The count is the sum over both stores, and unknown unless both
// were read whole. The rules of a store that was read whole are listed even when the
// other was not; rules|unknown then says the list is not the whole.
func (k kernel) rows(rules bool) []rows.Row {
	var out []rows.Row
	for _, b := range k.backends() {
		out = append(out, rows.New("backend", b))
	}
	complete := k.complete()
	if !rules {
		verdict := parse.Unknown
		switch {
		case k.hasContent():
			verdict = parse.Enabled
		case complete:
			verdict = parse.Disabled
		}
		out = append(out, rows.New("state", verdict.Activity()))
	} else if !complete {
		out = append(out, rulesUnknown())
	}
	if k.nft.TablesSeen {
		// nftables holds tables that could not be read whole.
		out = append(out, parse.NftDiagRow(k.nft.FailedDump, k.nft.FailedReason))
	}
	if rules {
		if k.nft.Answered {
			out = append(out, nftRuleRows(k.nft)...)
		}
		out = append(out, k.legacy.rows()...)
	}
	if !complete {
		return append(out, rulesetUnknown())
	}
	return append(out, rulesetCount(len(k.nft.Rules)+k.legacy.RuleCount()))
}

func rulesetCount(n int) rows.Row { return rows.New("ruleset", strconv.Itoa(n)) }
func rulesetUnknown() rows.Row    { return rows.New("ruleset", "unknown") }
func rulesUnknown() rows.Row      { return rows.New("rules", "unknown") }
