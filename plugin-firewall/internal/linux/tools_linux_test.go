package linux

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/plugin-firewall/internal/parse"
	"github.com/yuzugo/yuzu/sdk/subprocess"
)

// writeTool writes an executable shell script standing in for a firewall tool, so the
// ladder runs a real process through the real bounded runner.
func writeTool(t testing.TB, dir, name, script string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// toolLadder is a ladder with no firewalld, whose nftables and legacy rungs answer
// as given and whose ufw rung runs the given script through subprocess.Run.
func toolLadder(nft NftResult, legacy LegacyResult, ufw string, timeout time.Duration) *Ladder {
	return &Ladder{
		Firewalld:   func(context.Context) FirewalldResult { return FirewalldResult{} },
		Nftables:    func(context.Context) NftResult { return nft },
		Legacy:      func(context.Context) LegacyResult { return legacy },
		Run:         subprocess.Run,
		UfwPath:     ufw,
		ToolTimeout: timeout,
		Total:       DefaultTotal,
	}
}

func TestRealToolsUfw(t *testing.T) {
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
	missing := filepath.Join(dir, "absent")

	l := toolLadder(nftEmpty, legacyRules, ufw, 5*time.Second)
	rowsEqual(t, "ufw state", l.State(context.Background()), "backend|ufw", "state|active", "ruleset|5")
	rowsEqual(t, "ufw rules", l.Rules(context.Background()),
		"backend|ufw",
		"rule|1|22/tcp|ALLOW IN|Anywhere",
		"rule|2|5432/tcp|ALLOW IN|10.0.0.0/8",
		"rule|3|25/tcp|DENY OUT|Anywhere",
		"rule|4|22/tcp (v6)|ALLOW IN|Anywhere (v6)",
		"rule|5|25/tcp (v6)|DENY OUT|Anywhere (v6)",
		"ruleset|5")

	// ufw refused, missing, or named by a relative path (the runner refuses that):
	// the kernel answers.
	for name, path := range map[string]string{"not root": ufwNotRoot, "missing": missing, "relative": "ufw"} {
		l = toolLadder(nftEmpty, legacyRules, path, 5*time.Second)
		rowsEqual(t, name, l.State(context.Background()), "backend|iptables", "state|active", "ruleset|3")
	}
}

func TestRealToolsUfwHang(t *testing.T) {
	dir := t.TempDir()
	hang := writeTool(t, dir, "hang", "echo 'Status: inactive'\nexec sleep 30\n")
	l := toolLadder(nftFailed(parse.DumpRule, parse.ReasonTimeout, true), legacyNone, hang, 200*time.Millisecond)
	start := time.Now()
	got := l.State(context.Background())
	elapsed := time.Since(start)
	// ufw timed out, so its first line is not taken for an answer.
	rowsEqual(t, "hang", got, "fallthrough|nftables:rule:timeout", "backend|nftables", "state|unknown",
		"error|nftables:rule:timeout", "ruleset|unknown")
	// One tool, 200ms, plus process start-up; far below its sleep.
	if elapsed > 3*time.Second {
		t.Errorf("took %v with a 200ms tool deadline", elapsed)
	}
}

func TestRealToolsUfwOversizedOutput(t *testing.T) {
	// More output than the runner keeps: exit 0 but truncated, so nothing is trusted.
	dir := t.TempDir()
	flood := writeTool(t, dir, "flood", "echo 'Status: inactive'\nhead -c 3000000 /dev/zero | tr '\\0' 'x'\n")
	l := toolLadder(nftEmpty, legacyNone, flood, 5*time.Second)
	rowsEqual(t, "flood", l.State(context.Background()), "backend|ufw", "state|unknown", "ruleset|unknown")
}

// legacyBed is a stand-in /proc net directory and save tools, for the legacy reader
// run through the real bounded runner.
type legacyBed struct {
	t   *testing.T
	dir string
	r   *legacyReader
}

func newLegacyBed(t *testing.T) *legacyBed {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := &legacyBed{t: t, dir: dir}
	b.r = newLegacyReader(subprocess.Run, 5*time.Second)
	b.r.netDir = func() (string, error) { return filepath.Join(dir, "net"), nil }
	b.r.sources = []legacySource{
		{familyIPv4, "ip_tables_names", []string{filepath.Join(dir, "iptables-legacy-save"), filepath.Join(dir, "iptables-save")}},
		{familyIPv6, "ip6_tables_names", []string{filepath.Join(dir, "ip6tables-legacy-save"), filepath.Join(dir, "ip6tables-save")}},
	}
	return b
}

// names writes a family's list of tables; tool writes one of the save tools.
func (b *legacyBed) names(file, text string) {
	if err := os.WriteFile(filepath.Join(b.dir, "net", file), []byte(text), 0o444); err != nil {
		b.t.Fatal(err)
	}
}

func (b *legacyBed) tool(name, script string) { writeTool(b.t, b.dir, name, script) }

// catTestdata is a tool script printing a capture from internal/parse/testdata.
func catTestdata(t *testing.T, name string) string {
	p, err := filepath.Abs(filepath.Join("..", "parse", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return "cat '" + p + "'\n"
}

func TestRealToolsLegacy(t *testing.T) {
	// No table module loaded, or modules loaded and no table: read whole, nothing
	// to run.
	b := newLegacyBed(t)
	b.tool("iptables-legacy-save", "exit 7\n") // never run
	got := b.r.Read(context.Background())
	if !got.Complete() || got.HasTables() || len(got.Diag) != 0 {
		t.Errorf("no lists: %+v", got)
	}
	b.names("ip_tables_names", "")
	b.names("ip6_tables_names", "\n")
	got = b.r.Read(context.Background())
	if !got.Complete() || got.HasTables() || len(got.Diag) != 0 {
		t.Errorf("empty lists: %+v", got)
	}

	// Both families hold tables: every table of each is read.
	b = newLegacyBed(t)
	b.names("ip_tables_names", "filter\nnat\nmangle\nraw\n")
	b.names("ip6_tables_names", "raw\nfilter\n")
	b.tool("iptables-legacy-save", catTestdata(t, "iptables_legacy_save.txt"))
	b.tool("ip6tables-legacy-save", catTestdata(t, "ip6tables_legacy_save.txt"))
	got = b.r.Read(context.Background())
	if !got.Complete() || len(got.Diag) != 0 || !got.HasContent() || got.RuleCount() != 32 {
		t.Fatalf("both families: complete %v, diag %v, %d rules", got.Complete(), got.Diag, got.RuleCount())
	}
	// filter 26, nat 9, mangle 7 and raw 4 entries in IPv4; raw 3 and filter 7 in IPv6.
	if n := len(got.rows()); n != 56 {
		t.Errorf("%d rows, want every entry of every table (56)", n)
	}

	// The legacy-only tool is missing: the plain one (legacy on older systems) is used.
	b = newLegacyBed(t)
	b.names("ip_tables_names", "filter\n")
	b.tool("iptables-save", "printf '*filter\\n:INPUT DROP [0:0]\\nCOMMIT\\n'\n")
	got = b.r.Read(context.Background())
	want := []LegacyFamily{
		{Family: familyIPv4, Read: true, Listed: []string{"filter"}, Tables: []parse.IptTable{
			{Name: "filter", Entries: []parse.IptEntry{{Kind: parse.IptPolicy, Chain: "INPUT", Spec: "DROP"}}}}},
		{Family: familyIPv6, Read: true},
	}
	if !reflect.DeepEqual(got.Families, want) || len(got.Diag) != 0 {
		t.Errorf("fallback tool: %+v", got)
	}
}

func TestRealToolsLegacyFailures(t *testing.T) {
	tests := []struct {
		name  string
		tools map[string]string
		diag  string
	}{
		{"no tool", nil, "error|iptables:ip:no_tool"},
		// The plain tool is the nf_tables variant: it cannot see legacy tables.
		{"only the nf_tables variant", map[string]string{"iptables-save": "printf '# Generated by iptables-nft-save v1.8.9 (nf_tables) on now\\n*filter\\n:INPUT ACCEPT [0:0]\\nCOMMIT\\n'\n"},
			"error|iptables:ip:no_tool"},
		// A tool that prints nothing of the listed tables (as the nf_tables variant
		// does when it has no table of its own).
		{"listed table not dumped", map[string]string{"iptables-save": "echo '# Warning: iptables-legacy tables present' >&2\n"},
			"error|iptables:ip:missing:filter"},
		{"fails", map[string]string{"iptables-legacy-save": "exit 3\n"}, "error|iptables:ip:exit:3"},
		{"cut short", map[string]string{"iptables-legacy-save": "printf '*filter\\n:INPUT DROP [0:0]\\n'\n"}, "error|iptables:ip:unrecognised"},
		{"floods", map[string]string{"iptables-legacy-save": "printf '*filter\\n'; head -c 17000000 /dev/zero | tr '\\0' 'x'\n"},
			"error|iptables:ip:truncated"},
		{"killed", map[string]string{"iptables-legacy-save": "kill -9 $$\n"}, "error|iptables:ip:io_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newLegacyBed(t)
			b.names("ip_tables_names", "filter\n")
			for name, script := range tt.tools {
				b.tool(name, script)
			}
			got := b.r.Read(context.Background())
			rowsEqual(t, "diag", got.Diag, tt.diag)
			if got.Complete() || !got.HasTables() || got.HasContent() || got.RuleCount() != 0 || len(got.rows()) != 0 {
				t.Errorf("a failed family counted as read: %+v", got)
			}
		})
	}

	// The kernel's list cannot be read as a small regular file, or there is no /proc.
	b := newLegacyBed(t)
	if err := syscall.Mkfifo(filepath.Join(b.dir, "net", "ip_tables_names"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.names("ip6_tables_names", string(make([]byte, legacyMaxNames+1)))
	rowsEqual(t, "fifo, oversized", b.r.Read(context.Background()).Diag,
		"error|iptables:ip:io_error", "error|iptables:ip6:oversized")
	b.r.netDir = func() (string, error) { return "", errors.New("no /proc") }
	rowsEqual(t, "no proc", b.r.Read(context.Background()).Diag, "error|iptables:ip:io_error", "error|iptables:ip6:io_error")
}

// TestRealToolsLegacyHang checks the shared bound: a tool that hangs uses it up, the
// other family is not read either, and the whole read ends by the bound.
func TestRealToolsLegacyHang(t *testing.T) {
	b := newLegacyBed(t)
	b.r.timeout = 300 * time.Millisecond
	b.names("ip_tables_names", "filter\n")
	b.names("ip6_tables_names", "filter\n")
	b.tool("iptables-legacy-save", "echo '*filter'\nexec sleep 30\n")
	b.tool("ip6tables-legacy-save", "printf '*filter\\nCOMMIT\\n'\n")
	start := time.Now()
	got := b.r.Read(context.Background())
	elapsed := time.Since(start)
	rowsEqual(t, "diag", got.Diag, "error|iptables:ip:timeout", "error|iptables:ip6:timeout")
	if elapsed > 3*time.Second {
		t.Errorf("took %v with a 300ms bound", elapsed)
	}
}
