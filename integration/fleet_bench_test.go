//go:build linux

package integration

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/integration/fleetserver"
)

// BenchmarkFleetCommands: 1,000 `tags count` commands pushed at once through the test
// fleet server, the agent (`yuzu-agent run`, mutual TLS), the tags plugin and back;
// every one must answer SUCCESS. Target: at least 1,000 commands/s end to end, agent
// peak RSS under 64 MiB.
//
// It also reports what bounds the rate from the agent's own metrics: a command holds
// one of its plugin's slots (max(4, cores)) while it waits for its start record to be
// on disk (start-wait-ms) and while the plugin runs it (in-plugin-ms), so the slots
// cannot pass more than slots/(wait+run) commands a second (slot-bound-commands/s).
// An agent without the start-wait series (older builds) reports the rate alone.
func BenchmarkFleetCommands(b *testing.B) {
	f := newFleet(b, fleetserver.Options{}, tagsBin)
	addr := freeAddr(b)
	a := f.agent("--metrics-listen", addr)
	ctx := testCtx(b, 10*time.Minute)
	const batch = 1000
	round := 0
	start := time.Now()
	for b.Loop() {
		round++
		ids := make([]string, batch)
		for i := range ids {
			ids[i] = fmt.Sprintf("r%d-%d", round, i)
			if err := f.srv.Send(ctx, command(ids[i], "tags", "count")); err != nil {
				b.Fatal(err)
			}
		}
		for _, id := range ids {
			r, err := f.srv.WaitTerminal(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			if r.Terminal.GetStatus() != success || r.Terminals != 1 || len(r.Rows) != 1 {
				b.Fatalf("%s: %+v", id, r)
			}
		}
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(round*batch)/elapsed.Seconds(), "commands/s")
	b.ReportMetric(float64(procStatusBytes(b, a.cmd.Process.Pid, "VmHWM"))/(1<<20), "agent-peak-RSS-MiB")
	body := scrapeMetrics(b, addr)
	wait, waitOK := histogramMean(body, "yuzu_agent_command_start_wait_seconds", "tags")
	run, runOK := histogramMean(body, "yuzu_agent_command_duration_seconds", "tags")
	if waitOK && runOK {
		slots := max(4, runtime.NumCPU())
		b.ReportMetric(wait*1000, "start-wait-ms")
		b.ReportMetric(run*1000, "in-plugin-ms")
		b.ReportMetric(float64(slots)/(wait+run), "slot-bound-commands/s")
	}
	a.stop(b)
}

// scrapeMetrics reads the agent's metrics endpoint at addr.
func scrapeMetrics(tb testing.TB, addr string) string {
	tb.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return string(body)
}

// histogramMean is the mean of a histogram's series for plugin (its _sum over its
// _count) in a metrics text; false when the series is not there or empty.
func histogramMean(body, name, plugin string) (float64, bool) {
	value := func(suffix string) (float64, bool) {
		prefix := name + suffix + `{plugin="` + plugin + `"} `
		for line := range strings.Lines(body) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
				f, err := strconv.ParseFloat(v, 64)
				return f, err == nil
			}
		}
		return 0, false
	}
	sum, ok1 := value("_sum")
	count, ok2 := value("_count")
	if !ok1 || !ok2 || count == 0 {
		return 0, false
	}
	return sum / count, true
}

// BenchmarkFleetRows: one command answering 100,000 rows, relayed by the agent to the
// server in RUNNING messages of at most 64 KiB, on two agents in turn: one keeping the
// rows in its answer spool until the server has them (the default), one keeping none
// (--spool-answer-mib 0). Target: 1,000,000 rows/s or more with the spool, and the
// spool costing no more than a fifth (ratio spool/no-spool of 0.8 or more).
func BenchmarkFleetRows(b *testing.B) {
	type side struct {
		f     *fleet
		a     *agentProc
		total time.Duration
	}
	start := func(extra ...string) *side {
		f := newFleet(b, fleetserver.Options{}, sleeperBin)
		return &side{f: f, a: f.agent(extra...)}
	}
	spool, bare := start(), start("--spool-answer-mib", "0")
	ctx := testCtx(b, 10*time.Minute)
	const n = 100000
	round := 0
	for b.Loop() {
		round++
		for _, s := range []*side{spool, bare} {
			begin := time.Now()
			r, err := s.f.srv.Do(ctx, command(fmt.Sprint("rows-", round), "sleeper", "rows", "n="+strconv.Itoa(n)))
			s.total += time.Since(begin)
			if err != nil {
				b.Fatal(err)
			}
			if len(r.Rows) != n || r.Terminal.GetStatus() != success {
				b.Fatalf("%d rows, status %v", len(r.Rows), r.Terminal.GetStatus())
			}
		}
	}
	rate := func(s *side) float64 { return float64(round*n) / s.total.Seconds() }
	b.ReportMetric(rate(spool), "rows/s")
	b.ReportMetric(rate(bare), "rows/s-no-spool")
	b.ReportMetric(rate(spool)/rate(bare), "spool/no-spool")
	spool.a.stop(b)
	bare.a.stop(b)
}
