package linux

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/sdk/subprocess"
)

// scaled returns t with every bound multiplied by f.
func scaled(t Timeouts, f float64) Timeouts {
	s := func(d time.Duration) time.Duration { return time.Duration(float64(d) * f) }
	return Timeouts{Firewalld: s(t.Firewalld), NftTable: s(t.NftTable), NftChain: s(t.NftChain),
		NftRule: s(t.NftRule), Tool: s(t.Tool), Total: s(t.Total)}
}

// muteBus points the firewalld rung at a socket that accepts connections and never
// says a word: a system bus that hangs during the authentication handshake.
func muteBus(t testing.TB) {
	// Not t.TempDir: its name holds the test's name, and a comma there would split the
	// D-Bus address.
	dir, err := os.MkdirTemp("", "fwbus-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "mute")
	ln, err := listenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path="+sock)
}

// hangingNft is an nftables reader whose kernel answers the table and chain dumps at
// once and never answers a rule dump: each rule request waits until the deadline the
// reader put on its socket (or a later move of it, which is how a cancelled walk ends
// a request), the way a real socket does. That is the slowest way the rung can fail,
// because it uses the rung's whole budget and still leaves tables seen.
func hangingNft(t testing.TB, tm Timeouts) *nftReader {
	var deadline atomic.Int64
	k := &fakeKernel{
		tables: replies(tableMsg(t, unix.NFPROTO_INET, "filter")),
		chains: replies(chainMsg(t, chainSpec{unix.NFPROTO_INET, "filter", "input", u32(1), u32(0)})),
		rules: func(netlink.Message, string, string) ([]netlink.Message, error) {
			for time.Now().UnixNano() < deadline.Load() {
				time.Sleep(2 * time.Millisecond)
			}
			return nil, os.ErrDeadlineExceeded
		},
	}
	r := newNftReader(nftables.WithTestDial(k.dial(t)))
	r.tableBy, r.chainBy, r.ruleBy = tm.NftTable, tm.NftChain, tm.NftRule
	r.setDeadline = func(_ *netlink.Conn, d time.Time) error {
		deadline.Store(d.UnixNano())
		return nil
	}
	return r
}

// worstCaseLadder is a ladder on which nothing answers in time: a bus that never
// speaks, an nftables rule dump that never ends, a ufw that prints the start of a
// harmless-looking answer and then hangs, and legacy tables whose save tool does the
// same. The tools are real processes run through the real bounded runner.
func worstCaseLadder(t testing.TB, tm Timeouts) *Ladder {
	muteBus(t)
	dir := t.TempDir()
	ufw := writeTool(t, dir, "ufw", "echo 'Status: inactive'\nexec sleep 120\n")
	save := writeTool(t, dir, "iptables-legacy-save", "echo '*filter'\nexec sleep 120\n")
	if err := os.WriteFile(filepath.Join(dir, "ip_tables_names"), []byte("filter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	legacy := newLegacyReader(subprocess.Run, tm.Tool)
	legacy.netDir = func() (string, error) { return dir, nil }
	legacy.sources = []legacySource{{familyIPv4, "ip_tables_names", []string{save}}}
	nft := hangingNft(t, tm)
	return &Ladder{
		Firewalld: func(ctx context.Context) FirewalldResult {
			return queryFirewalld(ctx, tm.Firewalld, connectSystemBus)
		},
		Nftables:    nft.Read,
		Legacy:      legacy.Read,
		Run:         subprocess.Run,
		UfwPath:     ufw,
		ToolTimeout: tm.Tool,
		Total:       tm.Total,
	}
}

// What a walk on which nothing answers reports. With every rung given its bound,
// nftables saw tables it could not read whole, ufw never answered, and the legacy
// tables' tool ran but did not finish. When the total ends the walk during ufw's
// turn, the legacy tool cannot even start. Either way both stores are named, the
// failures spelled out, nothing reads as off and no rule is listed.
var (
	worstCaseState = []string{"fallthrough|nftables:rule:timeout", "error|iptables:ip:timeout",
		"backend|nftables", "backend|iptables", "state|unknown", "error|nftables:rule:timeout", "ruleset|unknown"}
	worstCaseRules = []string{"fallthrough|nftables:rule:timeout", "error|iptables:ip:timeout",
		"backend|nftables", "backend|iptables", "rules|unknown", "error|nftables:rule:timeout", "ruleset|unknown"}
)

// TestLadderWorstCaseInProportion runs the walk on which every rung hangs with the
// plugin's bounds shrunk tenfold, so it takes about two seconds instead of twenty. It
// checks both sides: the walk waited for every rung (so the rungs really hung and the
// proportion holds), and it ended by the worst case the bounds promise, never later.
// BenchmarkLadderWorstCase runs the same walk with the real bounds.
func TestLadderWorstCaseInProportion(t *testing.T) {
	// Process start, kills and scheduling on a busy machine can only add time; a walk
	// that skipped a hanging rung would be a whole rung (500 ms) short.
	const early, late = 200 * time.Millisecond, 500 * time.Millisecond
	full := scaled(DefaultTimeouts(), 0.1)
	capped := full
	capped.Total = full.Firewalld + full.NftRule + full.Tool/2 // ends the walk in ufw's turn
	tests := []struct {
		name  string
		tm    Timeouts
		rules bool
		want  []string
	}{
		{"state, every rung to its bound", full, false, worstCaseState},
		{"rules, every rung to its bound", full, true, worstCaseRules},
		{"state, total shorter than the rungs", capped, false, worstCaseState},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := worstCaseLadder(t, tt.tm)
			worst := tt.tm.WorstCase()
			start := time.Now()
			got := l.walk(context.Background(), tt.rules)
			elapsed := time.Since(start)
			rowsEqual(t, "rows", got, tt.want...)
			if elapsed > worst+late {
				t.Errorf("walk took %v, promised at most %v", elapsed, worst)
			}
			if elapsed < worst-early {
				t.Errorf("walk took %v, less than the %v every hanging rung should have cost: a rung did not hang", elapsed, worst)
			}
			t.Logf("walk took %v with a worst case of %v", elapsed, worst)
		})
	}
}

// TestDefaultWorstCase pins the documented bound: about twenty seconds.
func TestDefaultWorstCase(t *testing.T) {
	if got := DefaultTimeouts().WorstCase(); got != 20*time.Second {
		t.Errorf("default worst case %v, documented as 20s", got)
	}
}

// BenchmarkLadderWorstCase runs the walk on which nothing answers with the plugin's
// real bounds; each iteration takes about twenty seconds. It fails if a walk ends
// later than the documented worst case.
func BenchmarkLadderWorstCase(b *testing.B) {
	tm := DefaultTimeouts()
	worst := tm.WorstCase()
	l := worstCaseLadder(b, tm)
	var longest time.Duration
	for b.Loop() {
		start := time.Now()
		got := l.State(context.Background())
		elapsed := time.Since(start)
		longest = max(longest, elapsed)
		rowsEqual(b, "rows", got, worstCaseState...)
		if elapsed > worst+time.Second {
			b.Fatalf("walk took %v, documented worst case %v", elapsed, worst)
		}
	}
	b.ReportMetric(longest.Seconds(), "s/longest-walk")
}
