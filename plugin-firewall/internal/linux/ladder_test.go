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
	"github.com/yuzugo/yuzu/plugin-firewall/internal/row"
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

const (
	ufwPath = "/fake/ufw"
	iptPath = "/fake/iptables"
)

// ladderWith builds a ladder from fixed rung results.
func ladderWith(fw FirewalldResult, nft NftResult, tools map[string]tool) (*Ladder, *fakeRunner) {
	fr := &fakeRunner{tools: tools}
	return &Ladder{
		Firewalld:    func(context.Context) FirewalldResult { return fw },
		Nftables:     func(context.Context) NftResult { return nft },
		Run:          fr.run,
		UfwPath:      ufwPath,
		IptablesPath: iptPath,
		ToolTimeout:  DefaultToolTimeout,
		Total:        DefaultTotal,
	}, fr
}

func rowsEqual(t testing.TB, name string, got []row.Row, want ...string) {
	t.Helper()
	if g := row.Texts(got); !slices.Equal(g, want) {
		t.Errorf("%s:\n got  %q\n want %q", name, g, want)
	}
}

// nftFailed is an nftables read whose tables were seen but whose rule dump failed.
func nftFailed(dump, reason string, seen bool) NftResult {
	return NftResult{
		Diag:       []row.Row{parse.NftFallthroughRow(dump, reason)},
		TablesSeen: seen, FailedDump: dump, FailedReason: reason,
	}
}

// nftTableError is an nftables read whose table dump failed.
func nftTableError(reason string) NftResult {
	return NftResult{Diag: []row.Row{parse.NftDiagRow(parse.DumpTable, reason)}}
}

var (
	ufwActive = tool{out: "Status: active\n\n     To                         Action      From\n" +
		"     --                         ------      ----\n" +
		"[ 1] 22/tcp                     ALLOW IN    Anywhere                  \n" +
		"[ 2] 80|81/tcp                  DENY IN     10.0.0.0/8                \n\n"}
	ufwInactive = tool{out: "Status: inactive\n"}
	ufwNotRoot  = tool{exit: 1}
	iptFresh    = tool{out: "-P INPUT ACCEPT\n-P FORWARD ACCEPT\n-P OUTPUT ACCEPT\n"}
	iptRules    = tool{out: "-P INPUT DROP\n-P FORWARD ACCEPT\n-P OUTPUT ACCEPT\n-N mine\n-A INPUT -i lo -j ACCEPT\n-A mine -s 10.0.0.0/8 -j DROP\n"}
	iptNotRoot  = tool{exit: 4}
)

func TestLadderFirewalld(t *testing.T) {
	fw := FirewalldResult{Reachable: true, Complete: true, Zones: []Zone{
		{Name: "public", Services: []string{"ssh", "dhcpv6-client"}},
		{Name: "od|d\nzone", Services: []string{"we|ird"}},
		{Name: "trusted"},
	}}
	l, fr := ladderWith(fw, NftResult{Answered: true}, nil)
	rowsEqual(t, "state", l.State(context.Background()),
		"backend|firewalld", "state|running", "ruleset|3")
	rowsEqual(t, "rules", l.Rules(context.Background()),
		"backend|firewalld",
		"rule|firewalld|public|service|ssh",
		"rule|firewalld|public|service|dhcpv6-client",
		"rule|firewalld|od_d_zone|service|we|ird", // service names are not sanitized
		"ruleset|3")
	if len(fr.calls) != 0 {
		t.Errorf("tools were run after firewalld answered: %q", fr.calls)
	}

	incomplete := FirewalldResult{Reachable: true, Zones: []Zone{{Name: "public", Services: []string{"ssh"}}}}
	l, _ = ladderWith(incomplete, NftResult{Answered: true}, nil)
	rowsEqual(t, "incomplete state", l.State(context.Background()),
		"backend|firewalld", "state|running", "ruleset|unknown")
	rowsEqual(t, "incomplete rules", l.Rules(context.Background()),
		"backend|firewalld", "rules|unknown", "ruleset|unknown")

	empty := FirewalldResult{Reachable: true, Complete: true}
	l, _ = ladderWith(empty, NftResult{}, nil)
	rowsEqual(t, "no active zones", l.State(context.Background()),
		"backend|firewalld", "state|running", "ruleset|0")
}

func TestLadderNftables(t *testing.T) {
	nft := NftResult{Answered: true, Tables: 2,
		Chains: []NftChain{
			{Family: 1, Table: "filter", Name: "INPUT", Base: true, Hook: 1, HasPolicy: true, Policy: 0},
			{Family: 1, Table: "filter", Name: "custom-jump"},
			{Family: 2, Table: "fil|ter", Name: "IN\nPUT\r", Base: true, Hook: 0, HasPolicy: true, Policy: 1},
		},
		Rules: []NftRule{
			{Family: 1, Table: "filter", Chain: "INPUT", Handle: 42, HasHandle: true},
			{Family: 10, Table: "filter", Chain: "FORWARD"},
		},
	}
	l, fr := ladderWith(FirewalldResult{}, nft, map[string]tool{ufwPath: ufwActive, iptPath: iptRules})
	rowsEqual(t, "state", l.State(context.Background()), "backend|nftables", "state|active", "ruleset|2")
	rowsEqual(t, "rules", l.Rules(context.Background()),
		"backend|nftables",
		"rule|nftables|inet|filter|INPUT|input|drop",
		"rule|nftables|ip|fil_ter|IN_PUT_|prerouting|accept",
		"rule|nftables|inet|filter|INPUT|handle|42",
		"rule|nftables|ip6|filter|FORWARD|handle|unknown",
		"ruleset|2")
	if len(fr.calls) != 0 {
		t.Errorf("tools were run after nftables answered: %q", fr.calls)
	}

	// An empty kernel ruleset does not settle it: iptables-legacy rules are invisible
	// to nftables, so ufw and iptables are asked first...
	l, fr = ladderWith(FirewalldResult{}, NftResult{Answered: true}, map[string]tool{iptPath: iptRules})
	rowsEqual(t, "empty, legacy rules", l.State(context.Background()), "backend|iptables", "state|active", "ruleset|2")
	if want := []string{ufwPath + " status numbered", iptPath + " -S"}; !slices.Equal(fr.calls, want) {
		t.Errorf("calls %q, want %q", fr.calls, want)
	}
	l, _ = ladderWith(FirewalldResult{}, NftResult{Answered: true}, map[string]tool{ufwPath: ufwInactive, iptPath: iptRules})
	rowsEqual(t, "empty, ufw", l.State(context.Background()), "backend|ufw", "state|inactive", "ruleset|0")
	// ...and the empty ruleset answers only when neither does: inactive, zero rules,
	// never a terminal unknown for a read that completed.
	none := map[string]tool{ufwPath: {missing: true}, iptPath: {missing: true}}
	l, _ = ladderWith(FirewalldResult{}, NftResult{Answered: true}, none)
	rowsEqual(t, "empty", l.State(context.Background()), "backend|nftables", "state|inactive", "ruleset|0")
	rowsEqual(t, "empty rules", l.Rules(context.Background()), "backend|nftables", "ruleset|0")
	l, _ = ladderWith(FirewalldResult{}, NftResult{Answered: true}, map[string]tool{ufwPath: ufwNotRoot, iptPath: {missing: true}})
	rowsEqual(t, "empty, ufw refused", l.State(context.Background()), "backend|nftables", "state|inactive", "ruleset|0")
	// iptables ran and failed: whether legacy tables exist is not known.
	l, _ = ladderWith(FirewalldResult{}, NftResult{Answered: true}, map[string]tool{ufwPath: {missing: true}, iptPath: iptNotRoot})
	rowsEqual(t, "empty, iptables refused", l.State(context.Background()), "backend|iptables", "state|unknown", "ruleset|unknown")

	// Accept-policy base chains alone are inactive; a drop policy alone is active.
	accept := NftResult{Answered: true, Tables: 1, Chains: []NftChain{{Family: 2, Table: "t", Name: "c", Base: true, HasPolicy: true, Policy: 1}}}
	l, _ = ladderWith(FirewalldResult{}, accept, nil)
	rowsEqual(t, "accept only", l.State(context.Background()), "backend|nftables", "state|inactive", "ruleset|0")
	drop := NftResult{Answered: true, Tables: 1, Chains: []NftChain{{Family: 2, Table: "t", Name: "c", Base: true, HasPolicy: true, Policy: 0}}}
	l, _ = ladderWith(FirewalldResult{}, drop, nil)
	rowsEqual(t, "drop policy", l.State(context.Background()), "backend|nftables", "state|active", "ruleset|0")
}

func TestLadderUfw(t *testing.T) {
	tools := map[string]tool{ufwPath: ufwActive, iptPath: iptRules}
	l, fr := ladderWith(FirewalldResult{}, NftResult{}, tools)
	rowsEqual(t, "state", l.State(context.Background()), "backend|ufw", "state|active", "ruleset|2")
	rowsEqual(t, "rules", l.Rules(context.Background()),
		"backend|ufw", "rule|1|22/tcp|ALLOW IN|Anywhere", "rule|2|80_81/tcp|DENY IN|10.0.0.0/8", "ruleset|2")
	if want := []string{ufwPath + " status numbered", ufwPath + " status numbered"}; !slices.Equal(fr.calls, want) {
		t.Errorf("calls %q, want %q", fr.calls, want)
	}

	l, _ = ladderWith(FirewalldResult{}, NftResult{}, map[string]tool{ufwPath: ufwInactive})
	rowsEqual(t, "inactive", l.State(context.Background()), "backend|ufw", "state|inactive", "ruleset|0")
	rowsEqual(t, "inactive rules", l.Rules(context.Background()), "backend|ufw", "ruleset|0")

	// nftables tables were seen: ufw's "inactive" cannot be true of this host.
	seen := nftFailed(parse.DumpRule, parse.ReasonTimeout, true)
	l, _ = ladderWith(FirewalldResult{}, seen, map[string]tool{ufwPath: ufwInactive})
	rowsEqual(t, "clamped", l.State(context.Background()),
		"fallthrough|nftables:rule:timeout", "backend|ufw", "state|unknown", "ruleset|0")
	// The clamp is for the verdict only; the rules path lists what ufw read.
	rowsEqual(t, "clamped rules", l.Rules(context.Background()),
		"fallthrough|nftables:rule:timeout", "backend|ufw", "ruleset|0")
	l, _ = ladderWith(FirewalldResult{}, seen, map[string]tool{ufwPath: ufwActive})
	rowsEqual(t, "active not clamped", l.State(context.Background()),
		"fallthrough|nftables:rule:timeout", "backend|ufw", "state|active", "ruleset|2")

	// Exit 0 but output cut at the cap: ufw answers, but nothing it said is trusted.
	trunc := ufwActive
	trunc.truncated = true
	l, _ = ladderWith(FirewalldResult{}, NftResult{}, map[string]tool{ufwPath: trunc, iptPath: iptRules})
	rowsEqual(t, "truncated", l.State(context.Background()), "backend|ufw", "state|unknown", "ruleset|unknown")
	rowsEqual(t, "truncated rules", l.Rules(context.Background()), "backend|ufw", "rules|unknown", "ruleset|unknown")

	// Exit 0 with output that is not ufw's: unknown, never a guessed verdict.
	for name, out := range map[string]string{"empty": "", "garbage": "\x00\xff[ 1] x  y  z\n", "error text": "ERROR: problem\n"} {
		l, _ = ladderWith(FirewalldResult{}, NftResult{}, map[string]tool{ufwPath: {out: out}})
		rowsEqual(t, name, l.State(context.Background()), "backend|ufw", "state|unknown", "ruleset|unknown")
		rowsEqual(t, name+" rules", l.Rules(context.Background()), "backend|ufw", "rules|unknown", "ruleset|unknown")
	}
}

func TestLadderIptables(t *testing.T) {
	for name, ufw := range map[string]tool{"ufw missing": {missing: true}, "ufw not root": ufwNotRoot,
		"ufw timed out": {timedOut: true, out: "Status: active\n"}} {
		l, fr := ladderWith(FirewalldResult{}, NftResult{}, map[string]tool{ufwPath: ufw, iptPath: iptRules})
		rowsEqual(t, name, l.State(context.Background()), "backend|iptables", "state|active", "ruleset|2")
		if want := []string{ufwPath + " status numbered", iptPath + " -S"}; !slices.Equal(fr.calls, want) {
			t.Errorf("%s: calls %q, want %q", name, fr.calls, want)
		}
	}
	l, _ := ladderWith(FirewalldResult{}, NftResult{}, map[string]tool{iptPath: iptRules})
	rowsEqual(t, "rules", l.Rules(context.Background()),
		"backend|iptables",
		"rule|policy|INPUT|DROP", "rule|policy|FORWARD|ACCEPT", "rule|policy|OUTPUT|ACCEPT",
		"rule|new_chain|mine|", "rule|append|INPUT|-i lo -j ACCEPT", "rule|append|mine|-s 10.0.0.0/8 -j DROP",
		"ruleset|2")

	l, _ = ladderWith(FirewalldResult{}, NftResult{}, map[string]tool{iptPath: iptFresh})
	rowsEqual(t, "fresh", l.State(context.Background()), "backend|iptables", "state|inactive", "ruleset|0")

	// Failed iptables is final: unknown, and no fall through to none.
	for name, ipt := range map[string]tool{
		"not root":  iptNotRoot,
		"timed out": {timedOut: true, out: "-P INPUT ACCEPT\n"},
		"truncated": {truncated: true, out: "-P INPUT ACCEPT\n"},
		"empty":     {},
		"garbage":   {out: "\x7fELF\x02\x01\x01"},
	} {
		l, _ = ladderWith(FirewalldResult{}, NftResult{}, map[string]tool{iptPath: ipt})
		rowsEqual(t, name, l.State(context.Background()), "backend|iptables", "state|unknown", "ruleset|unknown")
		rowsEqual(t, name+" rules", l.Rules(context.Background()), "backend|iptables", "rules|unknown", "ruleset|unknown")
	}

	// Clamp: tables seen, iptables says inactive.
	seen := nftFailed(parse.DumpChain, "errno:22", true)
	l, _ = ladderWith(FirewalldResult{}, seen, map[string]tool{ufwPath: ufwNotRoot, iptPath: iptFresh})
	rowsEqual(t, "clamped", l.State(context.Background()),
		"fallthrough|nftables:chain:errno:22", "backend|iptables", "state|unknown", "ruleset|0")
}

func TestLadderTerminal(t *testing.T) {
	none := map[string]tool{ufwPath: {missing: true}, iptPath: {missing: true}}

	l, _ := ladderWith(FirewalldResult{}, NftResult{}, none)
	rowsEqual(t, "none state", l.State(context.Background()), "backend|none", "state|unknown", "ruleset|unknown")
	rowsEqual(t, "none rules", l.Rules(context.Background()), "backend|none", "rules|unknown", "ruleset|unknown")

	// A refused table dump: the error row stays, and no tables were seen.
	l, _ = ladderWith(FirewalldResult{}, nftTableError(parse.ReasonEPERM), none)
	rowsEqual(t, "table eperm", l.State(context.Background()),
		"error|nftables:table:eperm", "backend|none", "state|unknown", "ruleset|unknown")

	// The error row of a failed table dump stays beside a later backend's answer.
	l, _ = ladderWith(FirewalldResult{}, nftTableError(parse.ReasonEPERM), map[string]tool{ufwPath: ufwNotRoot, iptPath: iptNotRoot})
	rowsEqual(t, "table eperm then iptables", l.State(context.Background()),
		"error|nftables:table:eperm", "backend|iptables", "state|unknown", "ruleset|unknown")

	// Tables seen, chain or rule dump failed, nothing else answered.
	for _, dump := range []string{parse.DumpChain, parse.DumpRule} {
		l, _ = ladderWith(FirewalldResult{}, nftFailed(dump, parse.ReasonTimeout, true), none)
		rowsEqual(t, dump+" state", l.State(context.Background()),
			"fallthrough|nftables:"+dump+":timeout", "backend|nftables", "state|unknown",
			"error|nftables:"+dump+":timeout", "ruleset|unknown")
		rowsEqual(t, dump+" rules", l.Rules(context.Background()),
			"fallthrough|nftables:"+dump+":timeout", "backend|nftables", "rules|unknown",
			"error|nftables:"+dump+":timeout", "ruleset|unknown")
	}

	// A failed chain dump with zero tables seen ends at none.
	l, _ = ladderWith(FirewalldResult{}, nftFailed(parse.DumpChain, parse.ReasonIOError, false), none)
	rowsEqual(t, "no tables", l.State(context.Background()),
		"fallthrough|nftables:chain:io_error", "backend|none", "state|unknown", "ruleset|unknown")

	// Socket-level rows come first and stay.
	fd := NftResult{Diag: []row.Row{row.New("error", "fd_exhausted")}}
	l, _ = ladderWith(FirewalldResult{}, fd, none)
	rowsEqual(t, "fd exhausted", l.State(context.Background()),
		"error|fd_exhausted", "backend|none", "state|unknown", "ruleset|unknown")

	// Only ufw installed and it fails (not root): none, as upstream.
	l, _ = ladderWith(FirewalldResult{}, NftResult{}, map[string]tool{ufwPath: ufwNotRoot, iptPath: {missing: true}})
	rowsEqual(t, "ufw only, not root", l.State(context.Background()), "backend|none", "state|unknown", "ruleset|unknown")
}

func TestLadderHangingTools(t *testing.T) {
	hang := map[string]tool{ufwPath: {hang: true}, iptPath: {hang: true}}
	l, _ := ladderWith(FirewalldResult{}, NftResult{}, hang)
	l.ToolTimeout = 20 * time.Millisecond
	start := time.Now()
	rowsEqual(t, "hang", l.State(context.Background()), "backend|iptables", "state|unknown", "ruleset|unknown")
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v with a 20ms tool timeout", d)
	}

	// The walk as a whole is bounded too: a total shorter than the tool timeouts
	// cuts the walk short instead of adding them up.
	l, _ = ladderWith(FirewalldResult{}, NftResult{}, hang)
	l.ToolTimeout = time.Hour
	l.Total = 50 * time.Millisecond
	start = time.Now()
	rowsEqual(t, "total", l.Rules(context.Background()), "backend|iptables", "rules|unknown", "ruleset|unknown")
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v with a 50ms total", d)
	}
}

func TestLadderPassesDeadlineToRungs(t *testing.T) {
	var fwDeadline, nftDeadline time.Time
	l := &Ladder{
		Firewalld: func(ctx context.Context) FirewalldResult {
			fwDeadline, _ = ctx.Deadline()
			return FirewalldResult{}
		},
		Nftables: func(ctx context.Context) NftResult {
			nftDeadline, _ = ctx.Deadline()
			return NftResult{Answered: true}
		},
		Run: func(context.Context, subprocess.Spec) (subprocess.Result, error) {
			return subprocess.Result{}, errors.New("unused")
		},
		Total: time.Minute, ToolTimeout: time.Second,
	}
	start := time.Now()
	l.State(context.Background())
	for name, d := range map[string]time.Time{"firewalld": fwDeadline, "nftables": nftDeadline} {
		if d.IsZero() || d.Sub(start) > time.Minute+time.Second {
			t.Errorf("%s got deadline %v, want about a minute from %v", name, d, start)
		}
	}
}
