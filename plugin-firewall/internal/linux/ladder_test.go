package linux

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/plugin-firewall/internal/parse"
	"github.com/yuzugo/yuzu/sdk/rows"
	"github.com/yuzugo/yuzu/sdk/subprocess"
)

// tool is what a fake runner answers for one binary.
type tool struct {
	missing   bool // the binary does not exist
	exit      int
	out       string
	timedOut  bool
	truncated bool
	hang      bool // block until the deadline, like a tool that never answers
}

// fakeRunner answers by argv[0] and records every call.
type fakeRunner struct {
	tools map[string]tool
	calls []string
}

func (f *fakeRunner) run(ctx context.Context, spec subprocess.Spec) (subprocess.Result, error) {
	f.calls = append(f.calls, strings.Join(spec.Argv, " "))
	t, ok := f.tools[spec.Argv[0]]
	if !ok || t.missing {
		return subprocess.Result{ExitCode: -1}, &fs.PathError{Op: "fork/exec", Path: spec.Argv[0], Err: fs.ErrNotExist}
	}
	if t.hang {
		timer := time.NewTimer(spec.Timeout)
		defer timer.Stop()
		select {
		case <-timer.C:
			return subprocess.Result{ToolRan: true, ExitCode: -1, TimedOut: true, Reason: subprocess.ReasonDeadline}, nil
		case <-ctx.Done():
			return subprocess.Result{ToolRan: true, ExitCode: -1, Reason: subprocess.ReasonSignaled}, nil
		}
	}
	res := subprocess.Result{ToolRan: true, ExitCode: t.exit, Output: []byte(t.out),
		TimedOut: t.timedOut, OutputTruncated: t.truncated, Reason: subprocess.ReasonExited}
	if t.timedOut {
		res.ExitCode, res.Reason = -1, subprocess.ReasonDeadline
	}
	return res, nil
}

const ufwPath = "/fake/ufw"

// ladderWith builds a ladder from fixed rung results.
func ladderWith(fw FirewalldResult, nft NftResult, legacy LegacyResult, tools map[string]tool) (*Ladder, *fakeRunner, *int) {
	fr := &fakeRunner{tools: tools}
	legacyReads := 0
	return &Ladder{
		Firewalld: func(context.Context) FirewalldResult { return fw },
		Nftables:  func(context.Context) NftResult { return nft },
		Legacy: func(context.Context) LegacyResult {
			legacyReads++
			return legacy
		},
		Run:         fr.run,
		UfwPath:     ufwPath,
		ToolTimeout: DefaultToolTimeout,
		Total:       DefaultTotal,
	}, fr, &legacyReads
}

func rowsEqual(t testing.TB, name string, got []rows.Row, want ...string) {
	t.Helper()
	if g := rows.Texts(got); !slices.Equal(g, want) {
		t.Errorf("%s:\n got  %q\n want %q", name, g, want)
	}
}

// nftFailed is an nftables read whose tables were seen but whose rule dump failed.
func nftFailed(dump, reason string, seen bool) NftResult {
	return NftResult{
		Diag:       []rows.Row{parse.NftFallthroughRow(dump, reason)},
		TablesSeen: seen, FailedDump: dump, FailedReason: reason,
	}
}

// nftTableError is an nftables read whose table dump failed.
func nftTableError(reason string) NftResult {
	return NftResult{Diag: []rows.Row{parse.NftDiagRow(parse.DumpTable, reason)}}
}

var (
	ufwActive = tool{out: "Status: active\n\n     To                         Action      From\n" +
		"     --                         ------      ----\n" +
		"[ 1] 22/tcp                     ALLOW IN    Anywhere                  \n" +
		"[ 2] 80|81/tcp                  DENY IN     10.0.0.0/8                \n\n"}
	ufwInactive = tool{out: "Status: inactive\n"}
	ufwNotRoot  = tool{exit: 1}

	// An nftables read with one table: a drop-policy base chain and one rule.
	nftOne = NftResult{Answered: true, Tables: 1,
		Chains: []NftChain{{Family: 1, Table: "t", Name: "in", Base: true, Hook: 1, HasPolicy: true, Policy: 0}},
		Rules:  []NftRule{{Family: 1, Table: "t", Chain: "in", Handle: 2, HasHandle: true}}}
	nftEmpty = NftResult{Answered: true}

	// Legacy tables: none at all; filter with a drop policy, a user chain and two
	// rules in IPv4 and one rule in IPv6 nat; empty ACCEPT tables; and reads that
	// failed.
	legacyNone  = LegacyResult{Families: []LegacyFamily{{Family: familyIPv4, Read: true}, {Family: familyIPv6, Read: true}}}
	legacyRules = LegacyResult{Families: []LegacyFamily{
		{Family: familyIPv4, Read: true, Listed: []string{"filter"}, Tables: []parse.IptTable{{Name: "filter", Entries: []parse.IptEntry{
			{Kind: parse.IptPolicy, Chain: "INPUT", Spec: "DROP"}, {Kind: parse.IptNewChain, Chain: "mine"},
			{Kind: parse.IptAppend, Chain: "INPUT", Spec: "-i lo -j ACCEPT"}, {Kind: parse.IptAppend, Chain: "mine", Spec: "-s 10.0.0.0/8 -j DROP"},
		}}}},
		{Family: familyIPv6, Read: true, Listed: []string{"nat"}, Tables: []parse.IptTable{{Name: "nat", Entries: []parse.IptEntry{
			{Kind: parse.IptPolicy, Chain: "POSTROUTING", Spec: "ACCEPT"}, {Kind: parse.IptAppend, Chain: "POSTROUTING", Spec: "-j MASQUERADE"},
		}}}},
	}}
	legacyAccept = LegacyResult{Families: []LegacyFamily{
		{Family: familyIPv4, Read: true, Listed: []string{"filter"}, Tables: []parse.IptTable{{Name: "filter", Entries: []parse.IptEntry{
			{Kind: parse.IptPolicy, Chain: "INPUT", Spec: "ACCEPT"}}}}},
		{Family: familyIPv6, Read: true},
	}}
	// The IPv4 tables exist but no tool could read them; IPv6 has none.
	legacyUnread = LegacyResult{Diag: []rows.Row{legacyDiagRow(familyIPv4, reasonNoTool)}, Families: []LegacyFamily{
		{Family: familyIPv4, Listed: []string{"filter"}}, {Family: familyIPv6, Read: true}}}
	// The kernel's list itself was refused (not root): nothing is known.
	legacyRefused = LegacyResult{
		Diag:     []rows.Row{legacyDiagRow(familyIPv4, parse.ReasonEPERM), legacyDiagRow(familyIPv6, parse.ReasonEPERM)},
		Families: []LegacyFamily{{Family: familyIPv4}, {Family: familyIPv6}}}
	// IPv4 read whole with rules, IPv6 listed and not read.
	legacyHalf = LegacyResult{Diag: []rows.Row{legacyDiagRow(familyIPv6, parse.ReasonTimeout)}, Families: []LegacyFamily{
		legacyRules.Families[0], {Family: familyIPv6, Listed: []string{"filter"}}}}
)

// The rows legacyRules lists, in order.
var legacyRulesRows = []string{
	"rule|iptables|ip|filter|INPUT|policy|DROP",
	"rule|iptables|ip|filter|mine|new_chain|",
	"rule|iptables|ip|filter|INPUT|append|-i lo -j ACCEPT",
	"rule|iptables|ip|filter|mine|append|-s 10.0.0.0/8 -j DROP",
	"rule|iptables|ip6|nat|POSTROUTING|policy|ACCEPT",
	"rule|iptables|ip6|nat|POSTROUTING|append|-j MASQUERADE",
}

func cat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestLadderFirewalld(t *testing.T) {
	fw := FirewalldResult{Reachable: true, Complete: true, Zones: []Zone{
		{Name: "public", Target: "default", Services: []string{"ssh", "dhcpv6-client"}},
		{Name: "trusted", Target: "ACCEPT"},
	}}
	l, fr, legacyReads := ladderWith(fw, nftOne, legacyRules, map[string]tool{ufwPath: ufwActive})
	rowsEqual(t, "state", l.State(context.Background()),
		"backend|firewalld", "state|running", "ruleset|2")
	rowsEqual(t, "rules", l.Rules(context.Background()),
		"backend|firewalld",
		"rule|firewalld|public|target|default",
		"rule|firewalld|public|service|ssh",
		"rule|firewalld|public|service|dhcpv6-client",
		"rule|firewalld|trusted|target|ACCEPT",
		"ruleset|2")
	if len(fr.calls) != 0 || *legacyReads != 0 {
		t.Errorf("other sources were read after firewalld answered: %q, %d legacy reads", fr.calls, *legacyReads)
	}
}

// TestLadderKernelUnion covers a host where nftables holds tables: nftables and the
// legacy tables are both read and the answer is their union; ufw is not asked.
func TestLadderKernelUnion(t *testing.T) {
	nftRows := []string{"rule|nftables|inet|t|in|input|drop", "rule|nftables|inet|t|in|handle|2"}
	l, fr, _ := ladderWith(FirewalldResult{}, nftOne, legacyNone, map[string]tool{ufwPath: ufwInactive})
	rowsEqual(t, "nftables only", l.State(context.Background()), "backend|nftables", "state|active", "ruleset|1")
	rowsEqual(t, "nftables only rules", l.Rules(context.Background()), cat([]string{"backend|nftables"}, nftRows, []string{"ruleset|1"})...)
	if len(fr.calls) != 0 {
		t.Errorf("ufw was asked although nftables holds tables: %q", fr.calls)
	}

	l, _, _ = ladderWith(FirewalldResult{}, nftOne, legacyRules, nil)
	rowsEqual(t, "both", l.State(context.Background()), "backend|nftables", "backend|iptables", "state|active", "ruleset|4")
	rowsEqual(t, "both rules", l.Rules(context.Background()),
		cat([]string{"backend|nftables", "backend|iptables"}, nftRows, legacyRulesRows, []string{"ruleset|4"})...)

	// Accept-only tables in both: read whole, nothing filters.
	accept := NftResult{Answered: true, Tables: 1, Chains: []NftChain{{Family: 2, Table: "t", Name: "c", Base: true, HasPolicy: true, Policy: 1}}}
	l, _, _ = ladderWith(FirewalldResult{}, accept, legacyAccept, nil)
	rowsEqual(t, "accept only", l.State(context.Background()), "backend|nftables", "backend|iptables", "state|inactive", "ruleset|0")
	drop := NftResult{Answered: true, Tables: 1, Chains: []NftChain{{Family: 2, Table: "t", Name: "c", Base: true, HasPolicy: true, Policy: 0}}}
	l, _, _ = ladderWith(FirewalldResult{}, drop, legacyNone, nil)
	rowsEqual(t, "drop policy", l.State(context.Background()), "backend|nftables", "state|active", "ruleset|0")

	// Legacy tables that could not be read: what nftables holds is shown, the
	// failure is named, the total is unknown and nothing reads as off.
	l, _, _ = ladderWith(FirewalldResult{}, nftOne, legacyUnread, nil)
	rowsEqual(t, "legacy unread", l.State(context.Background()),
		"error|iptables:ip:no_tool", "backend|nftables", "backend|iptables", "state|active", "ruleset|unknown")
	rowsEqual(t, "legacy unread rules", l.Rules(context.Background()),
		cat([]string{"error|iptables:ip:no_tool", "backend|nftables", "backend|iptables", "rules|unknown"}, nftRows,
			[]string{"ruleset|unknown"})...)
	l, _, _ = ladderWith(FirewalldResult{}, accept, legacyUnread, nil)
	rowsEqual(t, "legacy unread beside accept", l.State(context.Background()),
		"error|iptables:ip:no_tool", "backend|nftables", "backend|iptables", "state|unknown", "ruleset|unknown")
	l, _, _ = ladderWith(FirewalldResult{}, nftOne, legacyHalf, nil)
	rowsEqual(t, "ip6 unread rules", l.Rules(context.Background()),
		cat([]string{"error|iptables:ip6:timeout", "backend|nftables", "backend|iptables", "rules|unknown"}, nftRows,
			legacyRulesRows[:4], []string{"ruleset|unknown"})...)
}

// TestLadderNoNftTables covers hosts where nftables holds no table: ufw is asked, and
// the legacy tables decide whether its answer stands.
func TestLadderNoNftTables(t *testing.T) {
	// ufw on: it answers with its own list.
	l, fr, legacyReads := ladderWith(FirewalldResult{}, nftEmpty, legacyRules, map[string]tool{ufwPath: ufwActive})
	rowsEqual(t, "ufw active", l.State(context.Background()), "backend|ufw", "state|active", "ruleset|2")
	rowsEqual(t, "ufw active rules", l.Rules(context.Background()),
		"backend|ufw", "rule|1|22/tcp|ALLOW IN|Anywhere", "rule|2|80_81/tcp|DENY IN|10.0.0.0/8", "ruleset|2")
	if want := []string{ufwPath + " status numbered", ufwPath + " status numbered"}; !slices.Equal(fr.calls, want) || *legacyReads != 0 {
		t.Errorf("calls %q (want %q), %d legacy reads", fr.calls, want, *legacyReads)
	}

	// ufw off while the legacy tables filter: a false "off" is never the answer.
	l, _, _ = ladderWith(FirewalldResult{}, nftEmpty, legacyRules, map[string]tool{ufwPath: ufwInactive})
	rowsEqual(t, "ufw inactive, legacy rules", l.State(context.Background()),
		"fallthrough|ufw:inactive", "backend|iptables", "state|active", "ruleset|3")
	rowsEqual(t, "ufw inactive, legacy rules: rules", l.Rules(context.Background()),
		cat([]string{"fallthrough|ufw:inactive", "backend|iptables"}, legacyRulesRows, []string{"ruleset|3"})...)

	// ufw off and the kernel holds nothing that filters: ufw's word stands.
	for name, legacy := range map[string]LegacyResult{"no legacy tables": legacyNone, "accept-only legacy tables": legacyAccept} {
		l, _, _ = ladderWith(FirewalldResult{}, nftEmpty, legacy, map[string]tool{ufwPath: ufwInactive})
		rowsEqual(t, name, l.State(context.Background()), "backend|ufw", "state|inactive", "ruleset|0")
		rowsEqual(t, name+" rules", l.Rules(context.Background()), "backend|ufw", "ruleset|0")
	}
	// ...but not when the kernel could not be read whole.
	l, _, _ = ladderWith(FirewalldResult{}, nftEmpty, legacyUnread, map[string]tool{ufwPath: ufwInactive})
	rowsEqual(t, "ufw inactive, legacy unread", l.State(context.Background()),
		"error|iptables:ip:no_tool", "backend|ufw", "state|unknown", "ruleset|0")
	l, _, _ = ladderWith(FirewalldResult{}, nftFailed(parse.DumpRule, parse.ReasonTimeout, true), legacyNone, map[string]tool{ufwPath: ufwInactive})
	rowsEqual(t, "ufw inactive, nftables unread", l.State(context.Background()),
		"fallthrough|nftables:rule:timeout", "backend|ufw", "state|unknown", "ruleset|0")
	l, _, _ = ladderWith(FirewalldResult{}, nftFailed(parse.DumpRule, parse.ReasonTimeout, true), legacyNone, map[string]tool{ufwPath: ufwActive})
	rowsEqual(t, "ufw active, nftables unread", l.State(context.Background()),
		"fallthrough|nftables:rule:timeout", "backend|ufw", "state|active", "ruleset|2")

	// ufw's output not trusted (cut at the cap, or not ufw's): unknown, unless the
	// kernel filters.
	trunc := ufwActive
	trunc.truncated = true
	for name, u := range map[string]tool{"truncated": trunc, "empty": {out: ""}, "garbage": {out: "\x00\xff[ 1] x  y  z\n"},
		"error text": {out: "ERROR: problem\n"}} {
		l, _, _ = ladderWith(FirewalldResult{}, nftEmpty, legacyNone, map[string]tool{ufwPath: u})
		rowsEqual(t, name, l.State(context.Background()), "backend|ufw", "state|unknown", "ruleset|unknown")
		rowsEqual(t, name+" rules", l.Rules(context.Background()), "backend|ufw", "rules|unknown", "ruleset|unknown")
		l, _, _ = ladderWith(FirewalldResult{}, nftEmpty, legacyRules, map[string]tool{ufwPath: u})
		rowsEqual(t, name+", legacy rules", l.State(context.Background()),
			"fallthrough|ufw:unknown", "backend|iptables", "state|active", "ruleset|3")
	}

	// No ufw (missing, not root, timed out): the kernel answers.
	for name, u := range map[string]tool{"ufw missing": {missing: true}, "ufw not root": ufwNotRoot,
		"ufw timed out": {timedOut: true, out: "Status: active\n"}} {
		l, _, _ = ladderWith(FirewalldResult{}, nftEmpty, legacyRules, map[string]tool{ufwPath: u})
		rowsEqual(t, name, l.State(context.Background()), "backend|iptables", "state|active", "ruleset|3")
		l, _, _ = ladderWith(FirewalldResult{}, nftEmpty, legacyAccept, map[string]tool{ufwPath: u})
		rowsEqual(t, name+", accept only", l.State(context.Background()), "backend|iptables", "state|inactive", "ruleset|0")
		l, _, _ = ladderWith(FirewalldResult{}, nftEmpty, legacyNone, map[string]tool{ufwPath: u})
		rowsEqual(t, name+", nothing", l.State(context.Background()), "backend|nftables", "state|inactive", "ruleset|0")
		rowsEqual(t, name+", nothing: rules", l.Rules(context.Background()), "backend|nftables", "ruleset|0")
	}
}

func TestLadderTerminal(t *testing.T) {
	none := map[string]tool{ufwPath: {missing: true}}

	// Nothing could be read at all.
	l, _, _ := ladderWith(FirewalldResult{}, nftTableError(parse.ReasonEPERM), legacyRefused, none)
	rowsEqual(t, "refused state", l.State(context.Background()),
		"error|nftables:table:eperm", "error|iptables:ip:eperm", "error|iptables:ip6:eperm",
		"backend|none", "state|unknown", "ruleset|unknown")
	rowsEqual(t, "refused rules", l.Rules(context.Background()),
		"error|nftables:table:eperm", "error|iptables:ip:eperm", "error|iptables:ip6:eperm",
		"backend|none", "rules|unknown", "ruleset|unknown")

	// nftables refused, legacy read whole: the legacy tables answer, but the
	// kernel's nftables side is unknown, so nothing reads as off.
	l, _, _ = ladderWith(FirewalldResult{}, nftTableError(parse.ReasonEPERM), legacyNone, none)
	rowsEqual(t, "nft refused, no legacy", l.State(context.Background()),
		"error|nftables:table:eperm", "backend|iptables", "state|unknown", "ruleset|unknown")
	l, _, _ = ladderWith(FirewalldResult{}, nftTableError(parse.ReasonEPERM), legacyRules, none)
	rowsEqual(t, "nft refused, legacy rules", l.State(context.Background()),
		"error|nftables:table:eperm", "backend|iptables", "state|active", "ruleset|unknown")
	rowsEqual(t, "nft refused, legacy rules: rules", l.Rules(context.Background()),
		cat([]string{"error|nftables:table:eperm", "backend|iptables", "rules|unknown"}, legacyRulesRows, []string{"ruleset|unknown"})...)

	// A kernel without nftables at all: the legacy tables are the whole answer.
	l, _, _ = ladderWith(FirewalldResult{}, NftResult{Absent: true}, legacyAccept, none)
	rowsEqual(t, "no nftables", l.State(context.Background()), "backend|iptables", "state|inactive", "ruleset|0")
	l, _, _ = ladderWith(FirewalldResult{}, NftResult{Absent: true}, legacyNone, none)
	rowsEqual(t, "no nftables, no tables", l.State(context.Background()), "backend|iptables", "state|inactive", "ruleset|0")

	// Tables seen, chain or rule dump failed, nothing else answered.
	for _, dump := range []string{parse.DumpChain, parse.DumpRule} {
		l, _, _ = ladderWith(FirewalldResult{}, nftFailed(dump, parse.ReasonTimeout, true), legacyNone, none)
		rowsEqual(t, dump+" state", l.State(context.Background()),
			"fallthrough|nftables:"+dump+":timeout", "backend|nftables", "state|unknown",
			"error|nftables:"+dump+":timeout", "ruleset|unknown")
		rowsEqual(t, dump+" rules", l.Rules(context.Background()),
			"fallthrough|nftables:"+dump+":timeout", "backend|nftables", "rules|unknown",
			"error|nftables:"+dump+":timeout", "ruleset|unknown")
		// With legacy rules beside them: active, both named, the failure spelled out.
		l, _, _ = ladderWith(FirewalldResult{}, nftFailed(dump, parse.ReasonTimeout, true), legacyRules, none)
		rowsEqual(t, dump+" state, legacy rules", l.State(context.Background()),
			"fallthrough|nftables:"+dump+":timeout", "backend|nftables", "backend|iptables", "state|active",
			"error|nftables:"+dump+":timeout", "ruleset|unknown")
	}

	// A failed chain dump with zero tables seen, legacy refused: none.
	l, _, _ = ladderWith(FirewalldResult{}, nftFailed(parse.DumpChain, parse.ReasonIOError, false), legacyRefused, none)
	rowsEqual(t, "no tables", l.State(context.Background()),
		"fallthrough|nftables:chain:io_error", "error|iptables:ip:eperm", "error|iptables:ip6:eperm",
		"backend|none", "state|unknown", "ruleset|unknown")

	// Socket-level rows come first and stay.
	fd := NftResult{Diag: []rows.Row{rows.New("error", "fd_exhausted")}}
	l, _, _ = ladderWith(FirewalldResult{}, fd, legacyRefused, none)
	rowsEqual(t, "fd exhausted", l.State(context.Background()),
		"error|fd_exhausted", "error|iptables:ip:eperm", "error|iptables:ip6:eperm", "backend|none", "state|unknown", "ruleset|unknown")

	// Only ufw installed and it fails (not root), the kernel refused: none.
	l, _, _ = ladderWith(FirewalldResult{}, nftTableError(parse.ReasonEPERM), legacyRefused, map[string]tool{ufwPath: ufwNotRoot})
	rowsEqual(t, "ufw only, not root", l.State(context.Background()),
		"error|nftables:table:eperm", "error|iptables:ip:eperm", "error|iptables:ip6:eperm",
		"backend|none", "state|unknown", "ruleset|unknown")
}

func TestLadderHangingTools(t *testing.T) {
	hang := map[string]tool{ufwPath: {hang: true}}
	l, _, _ := ladderWith(FirewalldResult{}, nftEmpty, legacyNone, hang)
	l.ToolTimeout = 20 * time.Millisecond
	start := time.Now()
	rowsEqual(t, "hang", l.State(context.Background()), "backend|nftables", "state|inactive", "ruleset|0")
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v with a 20ms tool timeout", d)
	}

	// The walk as a whole is bounded too: a total shorter than the tool timeout
	// cuts ufw short instead of waiting for it.
	l, _, _ = ladderWith(FirewalldResult{}, nftEmpty, legacyNone, hang)
	l.ToolTimeout = time.Hour
	l.Total = 50 * time.Millisecond
	start = time.Now()
	rowsEqual(t, "total", l.Rules(context.Background()), "backend|nftables", "ruleset|0")
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v with a 50ms total", d)
	}
}

func TestLadderPassesDeadlineToRungs(t *testing.T) {
	var fwDeadline, nftDeadline, legacyDeadline time.Time
	l := &Ladder{
		Firewalld: func(ctx context.Context) FirewalldResult {
			fwDeadline, _ = ctx.Deadline()
			return FirewalldResult{}
		},
		Nftables: func(ctx context.Context) NftResult {
			nftDeadline, _ = ctx.Deadline()
			return NftResult{Answered: true}
		},
		Legacy: func(ctx context.Context) LegacyResult {
			legacyDeadline, _ = ctx.Deadline()
			return legacyNone
		},
		Run: func(context.Context, subprocess.Spec) (subprocess.Result, error) {
			return subprocess.Result{}, errors.New("unused")
		},
		Total: time.Minute, ToolTimeout: time.Second,
	}
	start := time.Now()
	l.State(context.Background())
	for name, d := range map[string]time.Time{"firewalld": fwDeadline, "nftables": nftDeadline, "legacy": legacyDeadline} {
		if d.IsZero() || d.Sub(start) > time.Minute+time.Second {
			t.Errorf("%s got deadline %v, want about a minute from %v", name, d, start)
		}
	}
}
