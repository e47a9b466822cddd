package sdktest_test

import (
	"strings"
	"testing"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
	"github.com/yuzugo/yuzu/sdk/sdktest"
)

// KillMidCommand on the hello example's real child: two kills in the middle of count,
// restarts after the agent's first two backoffs, then the whole count on a third
// child.
func TestKillMidCommand(t *testing.T) {
	bin := sdktest.Build(t, "../examples/hello")
	cmd := host.Command{Action: "count", Params: map[string]string{"n": "40", "pause_ms": "50"}}
	r := sdktest.KillMidCommand(t, bin, sdk.Config{DataDir: t.TempDir()}, cmd, 2)
	t.Log("\n" + r.String())
	p := host.DefaultRestartPolicy()
	if r.Failed || len(r.Kills) != 2 {
		t.Fatalf("restart %+v, want two kills and no failure", r)
	}
	pids := map[int]bool{r.FinalPID: true}
	for i, k := range r.Kills {
		want, _ := p.Backoff(i + 1)
		if k.Backoff != want {
			t.Errorf("kill %d: backoff %v, want the agent's %v", i+1, k.Backoff, want)
		}
		if k.Err == nil || k.Before.Result != (sdk.Result{}) || len(k.Before.Rows) == 0 || len(k.Before.Rows) == 40 {
			t.Errorf("kill %d: %+v, want some rows and no result", i+1, k)
		}
		pids[k.PID] = true
	}
	if r.Kills[1].Backoff != 2*r.Kills[0].Backoff {
		t.Errorf("backoffs %v then %v, want doubling", r.Kills[0].Backoff, r.Kills[1].Backoff)
	}
	if len(pids) != 3 {
		t.Errorf("child pids %v, want three distinct children", pids)
	}
	if len(r.Final.Rows) != 40 || r.Final.Rows[39] != "number|40" || r.Final.Result != sdk.Complete() {
		t.Errorf("final %d rows %s, want the whole count", len(r.Final.Rows), host.Trailer(r.Final.Result))
	}
	if s := r.String(); !strings.Contains(s, "restart after 100ms backoff") || !strings.Contains(s, "restart after 200ms backoff") {
		t.Errorf("report %q does not show the backoffs", s)
	}
}

// Past the budget the report says failed, as the agent would.
func TestKillMidCommandSpendsTheBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("short: six real children")
	}
	bin := sdktest.Build(t, "../examples/hello")
	cmd := host.Command{Action: "count", Params: map[string]string{"n": "40", "pause_ms": "50"}}
	p := host.DefaultRestartPolicy()
	r := sdktest.KillMidCommand(t, bin, sdk.Config{DataDir: t.TempDir()}, cmd, p.Budget+1)
	if !r.Failed || len(r.Kills) != p.Budget+1 || len(r.Final.Rows) != 0 {
		t.Fatalf("restart %s, want failed after %d kills", r, p.Budget+1)
	}
	if !strings.Contains(r.String(), "budget of 5 restarts within 1m0s spent: failed for 5m0s") {
		t.Errorf("report %q does not say the plugin is failed", r)
	}
}
