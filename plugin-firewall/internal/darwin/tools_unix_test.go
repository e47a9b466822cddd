//go:build !windows

package darwin

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/sdk/subprocess"
)

// script writes an executable shell script standing in for socketfilterfw or pfctl,
// so the leg runs real processes through the real bounded runner (on any Unix).
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func realReader(sfw, pf string, timeout time.Duration) *Reader {
	return &Reader{Run: subprocess.Run, SocketfilterfwPath: sfw, PfctlPath: pf, ToolTimeout: timeout}
}

// TestRealToolsBadOutput runs the leg against tools that misbehave: hanging after a
// plausible first line, flooding past the runner's cap, printing binary junk, or
// printing nothing. Each verdict ends as unknown and each cut-short list as no rows,
// within the tools' deadlines; nothing reads as off. (pf rule lines are published raw
// from a complete read, as upstream publishes them, junk included.)
func TestRealToolsBadOutput(t *testing.T) {
	dir := t.TempDir()
	hangSfw := script(t, dir, "sfw-hang", "echo 'Firewall is disabled. (State = 0)'\nexec sleep 60\n")
	hangPf := script(t, dir, "pf-hang", "echo 'Status: Disabled'\necho 'pass in all'\nexec sleep 60\n")
	floodSfw := script(t, dir, "sfw-flood", "echo 'Firewall is disabled. (State = 0)'\nhead -c 2000000 /dev/zero\n")
	floodPf := script(t, dir, "pf-flood", "echo 'Status: Disabled'\nyes 'pass in all' | head -c 2000000\n")
	junk := script(t, dir, "junk", "printf '\\177ELF\\002\\001\\001\\000|\\r\\n\\377\\376'\n")
	silent := script(t, dir, "silent", "exit 0\n")
	// The junk's two lines, folded into one error detail.
	const junkDetail = "\x7fELF\x02\x01\x01\x00_ \xff\xfe"

	tests := []struct {
		name         string
		sfw, pf      string
		state, rules []string
	}{
		{"hanging", hangSfw, hangPf,
			[]string{"backend|appfirewall", "state|unknown", "error|globalstate:timeout", "block_all|unknown", "error|blockall:timeout",
				"stealth|unknown", "error|stealthmode:timeout", "pf|unknown", "ruleset|unknown"},
			[]string{"error|listapps:timeout", "ruleset|unknown"}},
		{"flooding", floodSfw, floodPf,
			[]string{"backend|appfirewall", "state|unknown", "error|globalstate:truncated", "block_all|unknown", "error|blockall:truncated",
				"stealth|unknown", "error|stealthmode:truncated", "pf|unknown", "ruleset|unknown"},
			[]string{"error|listapps:truncated", "ruleset|unknown"}},
		{"junk", junk, junk,
			[]string{"backend|appfirewall", "state|unknown", "error|globalstate:unrecognized:" + junkDetail,
				"block_all|unknown", "error|blockall:unrecognized:\x7fELF\x02\x01\x01\x00_", "stealth|unknown",
				"error|stealthmode:unrecognized:\x7fELF\x02\x01\x01\x00_",
				"pf|unknown", "anchor|\x7fELF\x02\x01\x01\x00_", "anchor|\xff\xfe", "ruleset|2"},
			[]string{"error|listapps:line:\x7fELF\x02\x01\x01\x00_", "error|listapps:line:\xff\xfe",
				"rule|\x7fELF\x02\x01\x01\x00_", "rule|\xff\xfe", "anchor|\x7fELF\x02\x01\x01\x00_", "anchor|\xff\xfe", "ruleset|2"}},
		{"silent", silent, silent,
			[]string{"backend|appfirewall", "state|unknown", "error|globalstate:empty", "block_all|unknown", "error|blockall:empty",
				"stealth|unknown", "error|stealthmode:empty", "pf|unknown", "ruleset|0"},
			[]string{"error|listapps:empty", "ruleset|0"}},
	}
	const timeout = 150 * time.Millisecond
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := realReader(tt.sfw, tt.pf, timeout)
			start := time.Now()
			rowsEqual(t, "state", r.State(context.Background()), tt.state...)
			rowsEqual(t, "rules", r.Rules(context.Background()), tt.rules...)
			// Nine tool runs in all; each is bounded by the deadline plus start-up.
			if d := time.Since(start); d > 9*(timeout+300*time.Millisecond) {
				t.Errorf("took %v with %v deadlines", d, timeout)
			}
		})
	}
}
