//go:build linux

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/integration/fleetserver"
)

// Goals of issue 17 for an idle `yuzu-agent run` with every shipped plugin.
const idleRSSGoalMiB = 30

// BenchmarkIdleRun: the resident memory of an idle `yuzu-agent run` with every shipped
// plugin, the agent's plus its children's (from /proc), once with every plugin warm
// (--idle-stop 0, as before lazy start) and once lazy (no child once the manifests are
// learnt), and the latency of a `tags count` sent through the fleet server when the
// plugin is idle (its child starts for it) against one when it runs. It logs the
// figures beside the goal (at most 30 MiB idle) with the load average; a missed goal
// does not fail it.
func BenchmarkIdleRun(b *testing.B) {
	if len(shipped) == 0 {
		b.Skip("no shipped plugins were built")
	}
	var bins []string
	for _, p := range shipped {
		bins = append(bins, "yuzu-plugin-"+p)
	}
	const samples = 5
	var warmMiB, lazyMiB float64
	var warmChildren, lazyChildren int
	var lazyMs, warmMs []float64
	for b.Loop() {
		// Warm: every plugin runs for good.
		f := newFleet(b, fleetserver.Options{}, bins...)
		a := f.agent("--idle-stop", "0")
		time.Sleep(3 * time.Second) // past the start's garbage
		warmMiB, warmChildren = treeRSSMiB(b, a.cmd.Process.Pid)
		ctx := testCtx(b, 5*time.Minute)
		for i := range samples {
			start := time.Now()
			r := f.do(b, ctx, command(fmt.Sprintf("warm%d", i), "tags", "count"))
			warmMs = append(warmMs, float64(time.Since(start).Microseconds())/1000)
			if r.Terminal.GetStatus() != success {
				b.Fatalf("warm tags count: %+v", r)
			}
		}
		a.stop(b)

		// Lazy: the children stop once run has their manifests, and after 1 s idle.
		f = newFleet(b, fleetserver.Options{}, bins...)
		a = f.agent("--idle-stop", "1s")
		time.Sleep(3 * time.Second)
		lazyMiB, lazyChildren = treeRSSMiB(b, a.cmd.Process.Pid)
		for i := range samples {
			waitIdle(b, f, "tags")
			start := time.Now()
			r := f.do(b, ctx, command(fmt.Sprintf("lazy%d", i), "tags", "count"))
			lazyMs = append(lazyMs, float64(time.Since(start).Microseconds())/1000)
			if r.Terminal.GetStatus() != success {
				b.Fatalf("lazy tags count: %+v", r)
			}
		}
		a.stop(b)
	}
	lazy, warm := median(lazyMs), median(warmMs)
	b.ReportMetric(warmMiB, "warm-idle-MiB")
	b.ReportMetric(lazyMiB, "lazy-idle-MiB")
	b.ReportMetric(lazy, "idle-first-cmd-ms")
	b.ReportMetric(warm, "warm-cmd-ms")
	met := "met"
	if lazyMiB > idleRSSGoalMiB {
		met = "missed"
	}
	b.Logf("idle run (%s): %.1f MiB agent+children lazy (%d children), goal <= %d MiB (%.2fx, %s); %.1f MiB all warm (%d children); load %s",
		strings.Join(shipped, ","), lazyMiB, lazyChildren, idleRSSGoalMiB, lazyMiB/idleRSSGoalMiB, met, warmMiB, warmChildren, loadavg())
	b.Logf("first command through the fleet (tags count, medians of %d): %.1f ms when the plugin is idle (its child starts), %.1f ms when it runs (%.2fx); load %s",
		samples, lazy, warm, lazy/warm, loadavg())
}

// treeRSSMiB is the resident memory of pid and its direct children (the plugin
// children of an agent), in MiB, and how many children it counted.
func treeRSSMiB(b *testing.B, pid int) (float64, int) {
	b.Helper()
	total := procStatusBytes(b, pid, "VmRSS")
	children := 0
	entries, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range entries {
		cpid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after the last ')'.
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			children++
			total += procStatusBytes(b, cpid, "VmRSS")
		}
	}
	return float64(total) / (1 << 20), children
}

// waitIdle polls `status` until the plugin is idle (its child gone).
func waitIdle(b *testing.B, f *fleet, plugin string) {
	b.Helper()
	re := regexp.MustCompile(`(?m)^` + plugin + ` +\S+ +\S+ +idle +- `)
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := runAgent(b, nil, "--data-dir", f.w.dataDir, "status")
		if re.MatchString(r.stdout) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s never idle:\n%s", plugin, r)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// loadavg is the first three fields of /proc/loadavg: a figure means little without it.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
