package main

import (
	"os"
	"strings"
	"testing"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/sdktest"
)

// TestChildActions runs both actions of the plugin binary (pluginBin) in a
// real child started the way the agent starts it (sdktest.Start). As root the child
// runs in an empty network namespace of its own, where the answer is known exactly;
// otherwise it reads the machine it runs on as an unprivileged user, which changes
// nothing either, and the answer's shape is checked. Both actions end with rc 0.
func TestChildActions(t *testing.T) {
	bin := pluginBin(t)
	if os.Geteuid() != 0 {
		checkShape(t, sdktest.Start(t, bin, sdk.Config{}))
		return
	}
	tb := newTestbed(t)
	h := tb.startBinary(bin, setup{ufw: true})
	// Nothing is loaded, so nftables has no table and ufw is asked: where installed,
	// it says it is off in a namespace where it never ran, and the kernel, holding
	// nothing, agrees. Without ufw the empty ruleset answers.
	withUfw := exists("/usr/sbin/ufw")
	for action, want := range map[string][]string{
		"state": {"backend|nftables", "state|inactive", "ruleset|0"},
		"rules": {"backend|nftables", "ruleset|0"},
	} {
		got := runAction(t, h, action)
		if withUfw {
			// ufw is Python and bounded by the tool timeout: on a very busy machine
			// it may not answer in time, and the kernel, holding nothing, answers
			// alone. ufw being asked and believed is checked by the shape tests.
			if len(got) > 0 && got[0] == "backend|nftables" {
				t.Logf("%s: ufw did not answer within its bound; the kernel answered", action)
			} else {
				want = append([]string{"backend|ufw"}, want[1:]...)
			}
		}
		rowsMatch(t, action, got, want...)
	}
	checkShape(t, h)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// checkShape runs both actions and checks what holds on any Linux machine: rc 0 and
// no typed status, diagnostic rows first, then one backend row naming a known
// backend, then rows of declared kinds, ending with the rule count; and an action the
// plugin does not have is refused.
func checkShape(t *testing.T, h *sdktest.Harness) {
	t.Helper()
	declared := map[string]map[string]bool{}
	for _, a := range h.Manifest().Actions {
		declared[a.Name] = map[string]bool{"error": true}
		for _, r := range a.Rows {
			declared[a.Name][r.Kind] = true
		}
	}
	backends := map[string]bool{"firewalld": true, "nftables": true, "ufw": true, "iptables": true, "none": true}
	for _, action := range []string{"state", "rules"} {
		rows := runAction(t, h, action)
		i := 0
		for i < len(rows) && (strings.HasPrefix(rows[i], "error|") || strings.HasPrefix(rows[i], "fallthrough|")) {
			i++
		}
		if i == len(rows) || !backends[strings.TrimPrefix(rows[i], "backend|")] || !strings.HasPrefix(rows[i], "backend|") {
			t.Errorf("%s: no backend row after the diagnostics: %q", action, rows)
			continue
		}
		if last := rows[len(rows)-1]; !strings.HasPrefix(last, "ruleset|") {
			t.Errorf("%s: last row %q, want ruleset|<n or unknown>", action, last)
		}
		for _, r := range rows {
			kind, _, _ := strings.Cut(r, "|")
			if !declared[action][kind] {
				t.Errorf("%s: undeclared row kind in %q", action, r)
			}
		}
	}
	o := h.Run("nope", nil)
	if len(o.Rows) != 1 || o.Rows[0] != "unknown action: nope" || o.Result.Code != 1 {
		t.Errorf("unknown action: %v", o)
	}
}
