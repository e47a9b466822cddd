package linux

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/plugin-firewall/internal/parse"
	"github.com/yuzugo/yuzu/plugin-firewall/internal/trace"
)

// TestLadderLogsEachBackendTried: at debug level the walk names every backend it
// tried, with why it passed over each, and the one it chose; at info it says nothing.
func TestLadderLogsEachBackendTried(t *testing.T) {
	walk := func(level hclog.Level, fw FirewalldResult, nft NftResult, legacy LegacyResult, tools map[string]tool) string {
		var buf bytes.Buffer
		log := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: level})
		l, _, _ := ladderWith(fw, nft, legacy, tools)
		l.State(trace.With(context.Background(), log))
		return buf.String()
	}
	noBus := FirewalldResult{Why: "no system bus: dial unix /run/dbus/system_bus_socket: no such file"}
	cases := []struct {
		name           string
		fw             FirewalldResult
		nft            NftResult
		legacy         LegacyResult
		tools          map[string]tool
		want, dontWant []string
	}{
		{"firewalld answers", FirewalldResult{Reachable: true, Complete: true}, nftOne, legacyNone, nil,
			[]string{"backend=firewalld outcome=answers", `firewall backend chosen: backend=firewalld`},
			[]string{"backend=nftables", "backend=ufw"}},
		{"nftables with tables", noBus, nftOne, legacyRules, nil,
			[]string{`backend=firewalld outcome="rejected: not reachable" reason="no system bus: dial unix`,
				"backend=nftables outcome=answers tables=1", `backend=iptables outcome="answers: the legacy tables are read"`,
				`backend=ufw outcome="not asked: nftables holds tables`, `firewall backend chosen: backend="nftables+iptables" why="the kernel's rule stores (nftables holds tables)"`},
			nil},
		{"ufw active", noBus, nftEmpty, legacyRules, map[string]tool{ufwPath: ufwActive},
			[]string{`backend=nftables outcome="read whole, no table"`, `backend=ufw outcome="answers: active" rules=2`,
				`firewall backend chosen: backend=ufw`},
			nil},
		{"ufw missing, nftables failed", noBus, nftFailed(parse.DumpRule, parse.ReasonTimeout, true), legacyUnread, nil,
			[]string{`backend=nftables outcome="rejected: not read whole" tables_seen=true failed=fallthrough|nftables:rule:timeout`,
				`backend=ufw outcome="rejected: did not answer" reason="fork/exec /fake/ufw`,
				`backend=iptables outcome="not read whole" has_tables=true failed=error|iptables:ip:no_tool`,
				`firewall backend chosen: backend="nftables+iptables" why="the kernel's rule stores"`},
			nil},
		{"ufw not root", noBus, NftResult{Absent: true}, legacyNone, map[string]tool{ufwPath: ufwNotRoot},
			[]string{`backend=nftables outcome="rejected: the kernel has no nf_tables"`, `reason="/fake/ufw exited 1"`,
				`backend=iptables outcome="read whole, no legacy table"`, `firewall backend chosen: backend=iptables`},
			nil},
	}
	for _, c := range cases {
		got := walk(hclog.Debug, c.fw, c.nft, c.legacy, c.tools)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: no %q in the log:\n%s", c.name, w, got)
			}
		}
		for _, w := range c.dontWant {
			if strings.Contains(got, w) {
				t.Errorf("%s: %q in the log:\n%s", c.name, w, got)
			}
		}
		if got := walk(hclog.Info, c.fw, c.nft, c.legacy, c.tools); got != "" {
			t.Errorf("%s: logged at info:\n%s", c.name, got)
		}
	}
}
