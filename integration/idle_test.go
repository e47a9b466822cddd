//go:build linux

package integration

import (
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/integration/fleetserver"
)

// TestFleetLazyStartAndIdleStop: with --idle-stop, `run` learns each plugin's actions
// once at start (the registration lists them) and then has no plugin child; a command
// starts its plugin, which is stopped again after the idle period, not as a crash
// (restarts stay 0), and the next command starts it again (docs/agent.md "Lazy start
// and idle stop").
func TestFleetLazyStartAndIdleStop(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, tagsBin, sleeperBin)
	a := f.agent("--idle-stop", "2s")
	regs := f.srv.Registrations()
	if len(regs) == 0 {
		t.Fatal("no registration")
	}
	caps := map[string][]string{}
	for _, p := range regs[len(regs)-1].GetInfo().GetPlugins() {
		caps[p.GetName()] = p.GetCapabilities()
	}
	if !slices.Contains(caps["tags"], "count") || !slices.Contains(caps["sleeper"], "sleep") {
		t.Errorf("registration capabilities %v, want every plugin's actions although none runs", caps)
	}

	status := []string{"--data-dir", f.w.dataDir, "status"}
	// waitStatus polls status until every pattern matches, with a generous bound for
	// a loaded machine.
	waitStatus := func(what string, patterns ...string) string {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			r := runAgent(t, nil, status...)
			ok := r.code == 0
			for _, p := range patterns {
				ok = ok && regexp.MustCompile(p).MatchString(r.stdout)
			}
			if ok {
				return r.stdout
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: status never matched %q:\n%s\nagent:\n%s", what, patterns, r, a.stderr.String())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitStatus("at start", `(?m)^tags +\S+ +\S+ +idle +- +0 +`, `(?m)^sleeper +\S+ +\S+ +idle +- +0 +`)

	ctx := testCtx(t, 120*time.Second)
	expectResult(t, f.do(t, ctx, command("c1", "tags", "count")), success, 0, "count|0")
	out := waitStatus("after a command", `(?m)^sleeper +\S+ +\S+ +idle +- +0 +`)
	// The tags child may already be idle again on a slow machine; it must never
	// have been counted as a crash.
	if !regexp.MustCompile(`(?m)^tags +\S+ +\S+ +(running +\d+|idle +-) +0 +`).MatchString(out) {
		t.Errorf("tags after its first command:\n%s", out)
	}
	waitStatus("after the idle period", `(?m)^tags +\S+ +\S+ +idle +- +0 +`)
	expectResult(t, f.do(t, ctx, command("c2", "tags", "count")), success, 0, "count|0")
	waitStatus("after the second idle period", `(?m)^tags +\S+ +\S+ +idle +- +0 +`, `(?m)^sleeper +\S+ +\S+ +idle +- +0 +`)
	if code := a.stop(t); code != 0 {
		t.Fatalf("agent exit %d\n%s", code, a.stderr.String())
	}
}
