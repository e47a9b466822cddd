//go:build linux

package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/integration/fleetserver"
)

// TestFullDiskRunsNothingTwice: with the data dir on a full 4 MiB tmpfs, the journal
// cannot record a start, so no command runs: each is answered REJECTED naming the
// journal and its error, and status and the log say the journal cannot write. The
// agent is killed, the disk freed, the server repeats the ids: each runs once (the
// appended file has 20 lines, not 40), and a second repeat is answered from the
// journal.
func TestFullDiskRunsNothingTwice(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	f := newFleet(t, fleetserver.Options{}, "yuzu-plugin-filesystem")
	if err := unix.Mount("tmpfs", f.w.dataDir, "tmpfs", 0, "size=4m,mode=0755"); err != nil {
		t.Skipf("no tmpfs for the data dir: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(f.w.dataDir, unix.MNT_DETACH) })
	a := f.agent()
	target := filepath.Join(t.TempDir(), "out.txt")
	writeFile(t, target, "", 0o644)
	filler := filepath.Join(f.w.dataDir, "filler")
	if out, err := exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=64k").CombinedOutput(); err == nil || !strings.Contains(string(out), "No space left") {
		t.Fatalf("filling the data dir: %v\n%s", err, out)
	}
	ctx := testCtx(t, 3*time.Minute)
	const n = 20
	cmd := func(i int) *agentv1.CommandRequest {
		return command(fmt.Sprintf("full-%02d", i), "filesystem", "append", "path="+target, fmt.Sprintf("content=line %02d", i))
	}
	for i := range n {
		r := f.do(t, ctx, cmd(i))
		if r.Terminal.GetStatus() != rejected || !strings.Contains(r.Terminal.GetOutput(), "the command journal cannot record this command's start (") ||
			!strings.Contains(r.Terminal.GetOutput(), "no space left on device") || !strings.HasSuffix(r.Terminal.GetOutput(), "); it did not run") {
			t.Fatalf("command %d on a full disk: %s %q", i, r.Terminal.GetStatus(), r.Terminal.GetOutput())
		}
	}
	if got := readFile(t, target); got != "" {
		t.Fatalf("commands ran while their start could not be recorded:\n%q", got)
	}
	st := runAgent(t, nil, "--data-dir", f.w.dataDir, "status")
	if st.code != 1 || !strings.Contains(st.stdout, "journal:     CANNOT WRITE since ") || !strings.Contains(st.stdout, "no space left on device") {
		t.Errorf("status while the journal cannot write:\n%s", st)
	}
	if c := strings.Count(a.stderr.String(), "command journal cannot write"); c != 1 {
		t.Errorf("the log says the journal cannot write %d times, want once:\n%s", c, a.stderr.String())
	}
	// Killed, disk freed, restarted; the server repeats every id.
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.wait(t, 30*time.Second)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	before := len(f.srv.Registrations())
	f.agent()
	if _, err := f.srv.WaitAccepted(ctx, before+1); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		for i := range n {
			if err := f.srv.Send(ctx, cmd(i)); err != nil {
				t.Fatal(err)
			}
		}
		want := 2 + round // REJECTED, then the run, then the replay
		deadline := time.Now().Add(time.Minute)
		for i := range n {
			id := cmd(i).GetCommandId()
			for f.srv.Result(id).Terminals < want && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			rs := f.srv.Responses(id)
			if last := rs[len(rs)-1]; last.GetStatus() != success {
				t.Errorf("%s, round %d: %s %q", id, round, last.GetStatus(), last.GetOutput())
			}
		}
	}
	lines := strings.Split(strings.TrimSpace(readFile(t, target)), "\n")
	if len(lines) != n {
		t.Errorf("%d lines appended, want %d (each command once):\n%s", len(lines), n, strings.Join(lines, "\n"))
	}
}

// TestOneTerminalPerCommand: an answer larger than the spool keeps (1 MiB here) ends
// SUCCESS; the server goes away right after that terminal came and before it was
// confirmed; the agent sends the answer again on the next connection, and every
// terminal the server gets for the command is that same SUCCESS, the rows it could not
// keep said missing in an error row, never a second, different terminal.
func TestOneTerminalPerCommand(t *testing.T) {
	t.Parallel()
	var stopOnce sync.Once
	var f *fleet
	gone := make(chan struct{})
	f = newFleet(t, fleetserver.Options{OnResponse: func(r *agentv1.CommandResponse) {
		if r.GetCommandId() == "big" && r.GetStatus() != agentv1.CommandResponse_RUNNING {
			stopOnce.Do(func() { go func() { f.srv.Stop(); close(gone) }() })
		}
	}}, sleeperBin)
	f.agent("--spool-answer-mib", "1", "--heartbeat", "30")
	ctx := testCtx(t, 3*time.Minute)
	if err := f.srv.Send(ctx, command("big", "sleeper", "rows", "n=100000")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gone:
	case <-ctx.Done():
		t.Fatal("no terminal for big")
	}
	if err := f.srv.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for f.srv.Result("big").Terminals < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	var statuses []string
	errorRows := 0
	for _, r := range f.srv.Responses("big") {
		if r.GetStatus() != agentv1.CommandResponse_RUNNING {
			statuses = append(statuses, r.GetStatus().String())
		} else if strings.HasPrefix(r.GetOutput(), "error|") && strings.Contains(r.GetOutput(), "rows may be missing") {
			errorRows++
		}
	}
	if len(statuses) < 2 {
		t.Fatalf("the answer was not sent again (terminals %v)", statuses)
	}
	for _, s := range statuses {
		if s != "SUCCESS" {
			t.Errorf("terminals for one command: %v, want the same SUCCESS each time", statuses)
			break
		}
	}
	if errorRows == 0 {
		t.Error("the re-send does not say that rows may be missing")
	}
}

// TestFleetAgentKilledRepeatedly: the agent is SIGKILLed 40 times, each time while a
// round of 25 commands (short sleeps that leave a marker file once they run) has
// started, at a random moment of their run or answer, and restarted on the same
// journal. A command goes to its plugin only once its start record is on disk, so
// every command whose marker exists must end with a terminal answer (none lost), and
// every answer of a command must be the same one (a re-send, never a second outcome).
// It exercises the journal's group commit across kills: a start or an answer is
// acknowledged only once its batch is on disk, and a kill cuts off only what was not.
func TestFleetAgentKilledRepeatedly(t *testing.T) {
	t.Parallel()
	const kills, perRound = 40, 25
	f := newFleet(t, fleetserver.Options{}, sleeperBin)
	marks := t.TempDir()
	ctx := testCtx(t, 5*time.Minute)
	rng := rand.New(rand.NewPCG(34, 40))
	var ids []string
	a := f.agent()
	for round := range kills {
		var markers []string
		for i := range perRound {
			id := fmt.Sprintf("k%d-%d", round, i)
			ids = append(ids, id)
			m := filepath.Join(marks, id)
			markers = append(markers, m)
			if err := f.srv.Send(ctx, command(id, "sleeper", "sleep_ctx", "seconds=0.1", "started="+m)); err != nil {
				t.Fatal(err)
			}
		}
		// The first slots' commands have started: their start records are on disk.
		waitStarted(t, markers[0])
		time.Sleep(time.Duration(rng.IntN(250)) * time.Millisecond)
		if err := a.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		a.wait(t, 10*time.Second)
		// Commands go to the new stream only: the server must have seen this one end.
		waitFor(t, 20*time.Second, "the server to see the killed agent's stream end", func() bool {
			for _, ag := range f.srv.Agents() {
				if ag.Subscribed {
					return false
				}
			}
			return true
		})
		a = f.agent()
	}
	lost, doubled, ran := 0, 0, 0
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, id := range ids {
		if _, err := os.Lstat(filepath.Join(marks, id)); err != nil {
			continue // never reached the plugin (queued when the agent died, or never delivered)
		}
		ran++
		r, err := f.srv.WaitTerminal(wctx, id)
		if err != nil {
			lost++
			t.Errorf("%s ran and has no terminal answer", id)
			continue
		}
		for _, resp := range f.srv.Responses(id) {
			if resp.GetStatus() == agentv1.CommandResponse_RUNNING {
				continue
			}
			if resp.GetStatus() != r.Terminal.GetStatus() || resp.GetError().GetCode() != r.Terminal.GetError().GetCode() {
				doubled++
				t.Errorf("%s: two outcomes, %v and %v", id, r.Terminal, resp)
				break
			}
		}
	}
	a.stop(t)
	t.Logf("%d kills, %d commands sent, %d ran: lost %d, two outcomes %d", kills, len(ids), ran, lost, doubled)
}
