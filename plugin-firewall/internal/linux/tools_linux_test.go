package linux

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/plugin-firewall/internal/parse"
	"github.com/yuzugo/yuzu/sdk/subprocess"
)

// writeTool writes an executable shell script standing in for ufw or iptables, so the
// ladder runs a real process through the real bounded runner.
func writeTool(t testing.TB, dir, name, script string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// toolLadder is a ladder with no firewalld and no nftables answer, whose subprocess
// rungs run the given scripts through subprocess.Run.
func toolLadder(nft NftResult, ufw, iptables string, timeout time.Duration) *Ladder {
	return &Ladder{
		Firewalld:    func(context.Context) FirewalldResult { return FirewalldResult{} },
		Nftables:     func(context.Context) NftResult { return nft },
		Run:          subprocess.Run,
		UfwPath:      ufw,
		IptablesPath: iptables,
		ToolTimeout:  timeout,
		Total:        DefaultTotal,
	}
}

func TestRealToolsUfwAndIptables(t *testing.T) {
	dir := t.TempDir()
	numbered, err := os.ReadFile(filepath.Join("testdata", "ufw_numbered_testbed.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "numbered.txt"), numbered, 0o644); err != nil {
		t.Fatal(err)
	}
	ufw := writeTool(t, dir, "ufw", `[ "$1 $2" = "status numbered" ] || exit 9
cat "`+dir+`/numbered.txt"
echo "noise on stderr" >&2
`)
	ufwNotRoot := writeTool(t, dir, "ufw-notroot", "echo 'ERROR: You need to be root to run this script' >&2\nexit 1\n")
	ipt := writeTool(t, dir, "iptables", `[ "$1" = "-S" ] || exit 9
printf -- '-P INPUT ACCEPT\n-P FORWARD ACCEPT\n-P OUTPUT ACCEPT\n'
echo "# Warning: iptables-legacy tables present, use iptables-legacy to see them" >&2
`)
	missing := filepath.Join(dir, "absent")

	l := toolLadder(NftResult{}, ufw, ipt, 5*time.Second)
	rowsEqual(t, "ufw state", l.State(context.Background()), "backend|ufw", "state|active", "ruleset|5")
	rowsEqual(t, "ufw rules", l.Rules(context.Background()),
		"backend|ufw",
		"rule|1|22/tcp|ALLOW IN|Anywhere",
		"rule|2|5432/tcp|ALLOW IN|10.0.0.0/8",
		"rule|3|25/tcp|DENY OUT|Anywhere",
		"rule|4|22/tcp (v6)|ALLOW IN|Anywhere (v6)",
		"rule|5|25/tcp (v6)|DENY OUT|Anywhere (v6)",
		"ruleset|5")

	// stderr is discarded, so iptables' warning does not become an entry.
	l = toolLadder(NftResult{}, ufwNotRoot, ipt, 5*time.Second)
	rowsEqual(t, "iptables", l.State(context.Background()), "backend|iptables", "state|inactive", "ruleset|0")
	l = toolLadder(NftResult{}, missing, ipt, 5*time.Second)
	rowsEqual(t, "no ufw", l.State(context.Background()), "backend|iptables", "state|inactive", "ruleset|0")
	l = toolLadder(NftResult{}, missing, missing, 5*time.Second)
	rowsEqual(t, "nothing", l.State(context.Background()), "backend|none", "state|unknown", "ruleset|unknown")

	// A relative tool path is refused by the runner and counts as not installed.
	l = toolLadder(NftResult{}, "ufw", "iptables", 5*time.Second)
	rowsEqual(t, "relative", l.State(context.Background()), "backend|none", "state|unknown", "ruleset|unknown")
}

func TestRealToolsHang(t *testing.T) {
	dir := t.TempDir()
	hang := writeTool(t, dir, "hang", "echo 'Status: active'\nexec sleep 30\n")
	seen := NftResult{TablesSeen: true, FailedDump: parse.DumpRule, FailedReason: parse.ReasonTimeout,
		Diag: nil}
	l := toolLadder(seen, hang, hang, 200*time.Millisecond)
	start := time.Now()
	got := l.State(context.Background())
	elapsed := time.Since(start)
	// ufw timed out: falls through; iptables timed out: final, unknown.
	rowsEqual(t, "hang", got, "backend|iptables", "state|unknown", "ruleset|unknown")
	// Two tools, 200ms each, plus process start-up; far below either tool's sleep.
	if elapsed > 3*time.Second {
		t.Errorf("took %v with 200ms tool deadlines", elapsed)
	}
}

func TestRealToolsOversizedOutput(t *testing.T) {
	// More output than the runner keeps: exit 0 but truncated, so nothing is trusted.
	dir := t.TempDir()
	flood := writeTool(t, dir, "flood", "echo 'Status: inactive'\nhead -c 3000000 /dev/zero | tr '\\0' 'x'\n")
	l := toolLadder(NftResult{}, flood, filepath.Join(dir, "absent"), 5*time.Second)
	rowsEqual(t, "flood", l.State(context.Background()), "backend|ufw", "state|unknown", "ruleset|unknown")
}
