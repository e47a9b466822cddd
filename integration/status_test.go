//go:build linux

package integration

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/integration/fleetserver"
)

// TestStatusOfARunningAgent: `yuzu-agent status` asks the running agent, over its
// socket, for its link, queue and plugins; a second agent on the same data dir is
// refused; when the agent has stopped, status says no agent answers (exit 3).
func TestStatusOfARunningAgent(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, tagsBin, sleeperBin)
	a := f.agent()
	status := []string{"--data-dir", f.w.dataDir, "status"}
	var r run
	// Subscribed is seen by the server first; the agent marks itself connected
	// right after. Poll, with a generous bound, until it says so.
	deadline := time.Now().Add(60 * time.Second)
	for {
		r = runAgent(t, nil, status...)
		if r.code == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r.code != 0 {
		t.Fatalf("status: %s\nagent:\n%s", r, a.stderr.String())
	}
	for _, want := range []string{
		`(?m)^agent: +\S+ \(commit \S+\), pid \d+, up since \S+$`,
		`(?m)^server: +` + regexp.QuoteMeta(f.srv.Addr()) + `, connected, \d+ reconnects$`,
		`(?m)^queue: +0 commands waiting or running$`,
		`(?m)^PLUGIN +VERSION +TRUST +STATE +PID +RESTARTS +ROLLBACKS +LAST ERROR +MEMORY PEAK/LIMIT +TASKS PEAK/LIMIT +CPU LIMIT$`,
		// Idle: run learnt their actions at start and stopped them (the default
		// --idle-stop); a command starts them again. The pid shows until the
		// stopping child has exited.
		`(?m)^sleeper +\S+ +unsigned +idle +(-|\d+) +0 +0 +- +`,
		`(?m)^tags +\S+ +unsigned +idle +(-|\d+) +0 +0 +- +`,
	} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("status lacks %s:\n%s", want, r.stdout)
		}
	}

	second := runAgent(t, nil, f.args()...)
	if second.code != 1 || !strings.Contains(second.stderr, "another agent answers") {
		t.Errorf("a second agent on the same data dir: %s", second)
	}

	if code := a.stop(t); code != 0 {
		t.Fatalf("agent exit %d\n%s", code, a.stderr.String())
	}
	r = runAgent(t, nil, status...)
	if r.code != 3 || !strings.Contains(r.stderr, "no running agent answers") {
		t.Errorf("status after the agent stopped: %s", r)
	}
}
