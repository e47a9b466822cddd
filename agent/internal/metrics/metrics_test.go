package metrics

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/agent/internal/limits"
	"github.com/yuzugo/yuzu/agent/supervisor"
)

func TestNilIsOff(t *testing.T) {
	var m *Metrics
	m.Command("p", "success", time.Second)
	m.QueueAdd(1)
	m.Reconnect()
	m.Connected(true)
	m.WatchPlugins(func() []supervisor.Status { return []supervisor.Status{{Name: "p", Restarts: 1}} })
	if b := m.appendText(nil); len(b) != 0 {
		t.Errorf("a nil Metrics exposes %q", b)
	}
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Errorf("a nil Metrics answers %d %q", rec.Code, rec.Body.String())
	}
}

func TestCounts(t *testing.T) {
	m := New()
	m.Command("tags", "success", 2*time.Millisecond)
	m.Command("tags", "success", 3*time.Millisecond)
	m.Command(OtherPlugin, "rejected", 0)
	m.QueueAdd(3)
	m.QueueAdd(-1)
	m.Reconnect()
	m.Connected(true)
	m.WatchPlugins(func() []supervisor.Status {
		return []supervisor.Status{{Name: "other"}, {Name: "tags", Restarts: 2}}
	})

	exp := parseExposition(t, string(m.appendText(nil)))
	got := map[string]float64{}
	for _, s := range exp.samples {
		if !strings.HasPrefix(s.name, "yuzu_agent_") {
			continue
		}
		name := s.name
		if fam, ok := strings.CutSuffix(name, "_count"); ok && exp.types[fam] == "histogram" {
			name = fam // a histogram's value here is its number of observations
		} else if exp.types[name] == "" {
			continue // _bucket and _sum
		}
		got[name+s.key()] = s.value
	}
	for k, want := range map[string]float64{
		`yuzu_agent_commands_total{plugin="tags",status="success"}`:      2,
		`yuzu_agent_commands_total{plugin="_unknown",status="rejected"}`: 1,
		`yuzu_agent_command_duration_seconds{plugin="tags"}`:             2, // observations
		`yuzu_agent_plugin_restarts_total{plugin="tags"}`:                2,
		`yuzu_agent_plugin_restarts_total{plugin="other"}`:               0,
		`yuzu_agent_queue_depth`:                                         2,
		`yuzu_agent_reconnects_total`:                                    1,
		`yuzu_agent_connected`:                                           1,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
		}
	}
	if _, ok := got[`yuzu_agent_command_duration_seconds{plugin="_unknown"}`]; ok {
		t.Error("a command that did not run has a latency")
	}
	for name, kind := range map[string]string{
		"yuzu_agent_commands_total":           "counter",
		"yuzu_agent_command_duration_seconds": "histogram",
		"yuzu_agent_plugin_restarts_total":    "counter",
		"yuzu_agent_queue_depth":              "gauge",
		"yuzu_agent_reconnects_total":         "counter",
		"yuzu_agent_connected":                "gauge",
	} {
		if exp.types[name] != kind {
			t.Errorf("%s has TYPE %q, want %q", name, exp.types[name], kind)
		}
	}
	m.Connected(false)
	if exp := parseExposition(t, string(m.appendText(nil))); exp.value(t, "yuzu_agent_connected", "") != 0 {
		t.Error("Connected(false) left the gauge up")
	}
}

// TestExpositionFormat reads the whole page with a strict parser (see parseExposition)
// and checks the histogram, the escaping and the runtime and process series.
func TestExpositionFormat(t *testing.T) {
	m := New()
	tricky := "a\"b\\c\nd"
	m.Command(tricky, "success", time.Millisecond) // exactly on a bound: counted there
	m.Command("tags", "success", 400*time.Microsecond)
	m.Command("tags", "failure", 7*time.Millisecond)
	m.Command("tags", "timeout", 20*time.Minute) // above every bound: only in +Inf
	m.Command("tags", "success", 0)
	text := string(m.appendText(nil))
	exp := parseExposition(t, text)

	if !strings.Contains(text, `yuzu_agent_commands_total{plugin="a\"b\\c\nd",status="success"} 1`+"\n") {
		t.Errorf("label value not escaped as the format wants:\n%s", text)
	}
	if v := exp.value(t, "yuzu_agent_commands_total", `{plugin="`+tricky+`",status="success"}`); v != 1 {
		t.Errorf("escaped label reads back as another series (%v)", v)
	}

	// Every histogram series: the bounds are the configured ones in order, the counts
	// never fall, the last bucket is +Inf and holds as many as _count.
	series := 0
	for _, s := range exp.samples {
		if s.name != "yuzu_agent_command_duration_seconds_count" {
			continue
		}
		series++
		var les []string
		var prev float64
		var last string
		for _, b := range exp.samples {
			if b.name != "yuzu_agent_command_duration_seconds_bucket" || b.get("plugin") != s.get("plugin") {
				continue
			}
			if b.value < prev {
				t.Errorf("bucket le=%s of %q = %v, below the previous %v", b.get("le"), s.key(), b.value, prev)
			}
			prev, last = b.value, b.get("le")
			les = append(les, last)
		}
		var want []string
		for _, f := range latencyBuckets {
			want = append(want, strconv.FormatFloat(f, 'g', -1, 64))
		}
		want = append(want, "+Inf")
		if !slices.Equal(les, want) {
			t.Errorf("%q buckets %v, want %v", s.key(), les, want)
		}
		if last != "+Inf" || prev != s.value {
			t.Errorf("%q: last bucket le=%s holds %v, _count is %v", s.key(), last, prev, s.value)
		}
	}
	if series != 2 {
		t.Errorf("%d latency series, want 2 (tags and the tricky name)", series)
	}
	for _, c := range []struct {
		le   string
		want float64
	}{{"0.0005", 1}, {"0.001", 1}, {"0.005", 1}, {"0.01", 2}, {"600", 2}, {"+Inf", 3}} {
		if v := exp.value(t, "yuzu_agent_command_duration_seconds_bucket", `{plugin="tags",le="`+c.le+`"}`); v != c.want {
			t.Errorf("tags bucket le=%s = %v, want %v", c.le, v, c.want)
		}
	}
	if v := exp.value(t, "yuzu_agent_command_duration_seconds_bucket", `{plugin="`+tricky+`",le="0.001"}`); v != 1 {
		t.Errorf("an observation equal to a bound is not in its bucket (%v)", v)
	}
	if v := exp.value(t, "yuzu_agent_command_duration_seconds_bucket", `{plugin="`+tricky+`",le="0.0005"}`); v != 0 {
		t.Errorf("an observation is in a bucket below it (%v)", v)
	}
	if v, want := exp.value(t, "yuzu_agent_command_duration_seconds_sum", `{plugin="tags"}`), 0.0004+0.007+1200; math.Abs(v-want) > 1e-9 {
		t.Errorf("tags latency sum %v, want %v", v, want)
	}

	// Series are in label order.
	var order []string
	for _, s := range exp.samples {
		if s.name == "yuzu_agent_commands_total" {
			order = append(order, s.get("plugin")+"/"+s.get("status"))
		}
	}
	if want := []string{tricky + "/success", "tags/failure", "tags/success", "tags/timeout"}; !slices.Equal(order, want) {
		t.Errorf("command series in the order %q, want %q", order, want)
	}

	// The families never filled are left out rather than shown empty.
	if _, ok := exp.types["yuzu_agent_plugin_restarts_total"]; ok {
		t.Error("the restart family is shown without any series")
	}

	if v := exp.value(t, "go_goroutines", ""); v < 1 {
		t.Errorf("go_goroutines %v", v)
	}
	if v := exp.value(t, "go_memstats_heap_alloc_bytes", ""); v <= 0 {
		t.Errorf("go_memstats_heap_alloc_bytes %v", v)
	}
	if v := exp.value(t, "go_memstats_sys_bytes", ""); v <= 0 {
		t.Errorf("go_memstats_sys_bytes %v", v)
	}
	if v := exp.value(t, "process_start_time_seconds", ""); math.Abs(v-float64(time.Now().Unix())) > 60 {
		t.Errorf("process_start_time_seconds %v, now is %d", v, time.Now().Unix())
	}
	_, rss := exp.types["process_resident_memory_bytes"]
	if rss != (runtime.GOOS == "linux") {
		t.Errorf("process_resident_memory_bytes shown %v on %s", rss, runtime.GOOS)
	}
	if rss && exp.value(t, "process_resident_memory_bytes", "") < 1<<20 {
		t.Errorf("process_resident_memory_bytes %v", exp.value(t, "process_resident_memory_bytes", ""))
	}

	// The same state gives the same page.
	if again := string(m.appendText(nil)); stripRuntime(again) != stripRuntime(text) {
		t.Errorf("output changed between two scrapes:\n%s\n---\n%s", text, again)
	}
}

// stripRuntime drops the series that move by themselves between two scrapes.
func stripRuntime(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "go_") && !strings.HasPrefix(l, "process_") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestConcurrentCounts: counters, the histogram and the gauge lose nothing when many
// commands end at once (run with -race).
func TestConcurrentCounts(t *testing.T) {
	m := New()
	const workers, each = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			plugin := fmt.Sprintf("p%d", w%2)
			for range each {
				m.QueueAdd(1)
				m.Command(plugin, "success", time.Millisecond)
				m.QueueAdd(-1)
				m.Reconnect()
			}
		})
	}
	// Scrapes while the counts move.
	wg.Go(func() {
		for range 20 {
			m.appendText(nil)
		}
	})
	wg.Wait()
	exp := parseExposition(t, string(m.appendText(nil)))
	for _, p := range []string{"p0", "p1"} {
		if v := exp.value(t, "yuzu_agent_commands_total", `{plugin="`+p+`",status="success"}`); v != workers/2*each {
			t.Errorf("%s commands %v, want %d", p, v, workers/2*each)
		}
		if v := exp.value(t, "yuzu_agent_command_duration_seconds_count", `{plugin="`+p+`"}`); v != workers/2*each {
			t.Errorf("%s observations %v, want %d", p, v, workers/2*each)
		}
	}
	if v := exp.value(t, "yuzu_agent_queue_depth", ""); v != 0 {
		t.Errorf("queue depth %v, want 0", v)
	}
	if v := exp.value(t, "yuzu_agent_reconnects_total", ""); v != workers*each {
		t.Errorf("reconnects %v, want %d", v, workers*each)
	}
}

func TestServe(t *testing.T) {
	m := New()
	m.Connected(true)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx, l) }()
	base := "http://" + l.Addr().String()

	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /metrics: %s", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if !strings.Contains(string(body), "\nyuzu_agent_connected 1\n") {
		t.Errorf("GET /metrics body:\n%s", body)
	}
	parseExposition(t, string(body))

	for _, c := range []struct {
		method, path string
		want         int
	}{{http.MethodPost, "/metrics", http.StatusMethodNotAllowed}, {http.MethodGet, "/", http.StatusNotFound}, {http.MethodGet, "/metrics/x", http.StatusNotFound}} {
		req, _ := http.NewRequest(c.method, base+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s: %s, want %d", c.method, c.path, resp.Status, c.want)
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
}

// exposition is a page in the text format, as parseExposition read it.
type exposition struct {
	types   map[string]string // family name to TYPE
	samples []sample
}

type sample struct {
	name   string
	labels [][2]string // name, unescaped value; in page order
	value  float64
}

func (s sample) get(name string) string {
	for _, l := range s.labels {
		if l[0] == name {
			return l[1]
		}
	}
	return ""
}

// key writes the labels but le as {name="value",...} with the values unescaped.
func (s sample) key() string {
	var parts []string
	for _, l := range s.labels {
		if l[0] != "le" {
			parts = append(parts, l[0]+`="`+l[1]+`"`)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// value is the one sample of name whose key() (with le) is labels; the test fails
// when there is none.
func (e exposition) value(t *testing.T, name, labels string) float64 {
	t.Helper()
	for _, s := range e.samples {
		if s.name != name {
			continue
		}
		k := s.key()
		if le := s.get("le"); le != "" {
			k = strings.TrimSuffix(k, "}") + `,le="` + le + `"}`
		}
		if k == labels {
			return s.value
		}
	}
	t.Fatalf("no sample %s%s", name, labels)
	return 0
}

var (
	metricName = `[a-zA-Z_:][a-zA-Z0-9_:]*`
	helpLine   = regexp.MustCompile(`^# HELP (` + metricName + `) ((?:[^\\]|\\[\\n])*)$`)
	typeLine   = regexp.MustCompile(`^# TYPE (` + metricName + `) (counter|gauge|histogram)$`)
	sampleLine = regexp.MustCompile(`^(` + metricName + `)(?:\{(.*)\})? (\S+)$`)
	labelPair  = regexp.MustCompile(`^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\["\\n])*)"`)
)

// parseExposition reads a page strictly, failing the test at the first line that is not
// a HELP, a TYPE or a sample as the 0.0.4 text format writes them, and checks the page's
// shape: each family is a HELP, then its TYPE, then at least one sample of its own;
// families are in name order and appear once; samples are unique; no label value has
// an unknown escape; the page ends with a line feed.
func parseExposition(t *testing.T, text string) exposition {
	t.Helper()
	e := exposition{types: map[string]string{}}
	if !strings.HasSuffix(text, "\n") {
		t.Fatalf("page does not end with a line feed: %q", text)
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	var family, kind, help string
	var families []string
	samplesInFamily := 0
	seen := map[string]bool{}
	endFamily := func() {
		if family != "" && samplesInFamily == 0 {
			t.Errorf("family %s has no samples", family)
		}
	}
	for i, line := range lines {
		bad := func(why string) { t.Fatalf("line %d %q: %s", i+1, line, why) }
		if m := helpLine.FindStringSubmatch(line); m != nil {
			endFamily()
			if help != "" && family == "" {
				bad("HELP of " + help + " had no TYPE")
			}
			if e.types[m[1]] != "" || m[1] == help {
				bad("family seen before")
			}
			help, family, kind, samplesInFamily = m[1], "", "", 0
			continue
		}
		if m := typeLine.FindStringSubmatch(line); m != nil {
			if m[1] != help || family != "" {
				bad("TYPE does not follow its HELP")
			}
			family, kind = m[1], m[2]
			e.types[family] = kind
			families = append(families, family)
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			bad("neither HELP, TYPE nor a sample")
		}
		if family == "" {
			bad("sample before its TYPE")
		}
		name := m[1]
		suffixes := []string{""}
		if kind == "histogram" {
			suffixes = []string{"_bucket", "_sum", "_count"}
		}
		if !slices.ContainsFunc(suffixes, func(s string) bool { return name == family+s }) {
			bad("sample outside its family " + family)
		}
		s := sample{name: name}
		if m[2] != "" || strings.Contains(line, "{") {
			rest := m[2]
			for {
				p := labelPair.FindStringSubmatch(rest)
				if p == nil {
					bad("malformed labels")
				}
				for _, l := range s.labels {
					if l[0] == p[1] {
						bad("label repeated")
					}
				}
				v := strings.NewReplacer(`\\`, `\`, `\"`, `"`, `\n`, "\n").Replace(p[2])
				s.labels = append(s.labels, [2]string{p[1], v})
				rest = rest[len(p[0]):]
				if rest == "" {
					break
				}
				if rest[0] != ',' {
					bad("labels not separated by commas")
				}
				rest = rest[1:]
			}
		}
		if (name == family+"_bucket") != (s.get("le") != "") {
			bad("le on a sample that is not a bucket, or a bucket without le")
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			bad("value: " + err.Error())
		}
		s.value = v
		id := name + s.key() + "le=" + s.get("le")
		if seen[id] {
			bad("sample repeated")
		}
		seen[id] = true
		e.samples = append(e.samples, s)
		samplesInFamily++
	}
	endFamily()
	if family == "" && help != "" {
		t.Errorf("HELP %s without TYPE at the end", help)
	}
	if !slices.IsSorted(families) {
		t.Errorf("families not in name order: %v", families)
	}
	return e
}

// The hot path, one Command per fleet command, allocates nothing once its series exist.
func TestCommandDoesNotAllocate(t *testing.T) {
	m := New()
	m.Command("tags", "success", time.Millisecond)
	if n := testing.AllocsPerRun(100, func() { m.Command("tags", "success", time.Millisecond) }); n != 0 {
		t.Errorf("Command allocates %v times per call", n)
	}
}

// lifeCycle are the per-plugin series every plugin has, boxed or not.
var lifeCycle = map[string]bool{"yuzu_agent_plugin_restarts_total": true, "yuzu_agent_plugin_state": true, "yuzu_agent_plugin_idle_stops_total": true,
	"yuzu_agent_plugin_upgrades_total": true, "yuzu_agent_plugin_rollbacks_total": true}

// Every plugin's state is one series labelled with it; idle stops and the last start
// time are per plugin too, the start time only for a plugin that has started.
func TestPluginStateSeries(t *testing.T) {
	m := New()
	m.WatchPlugins(func() []supervisor.Status {
		return []supervisor.Status{{Name: "fs", State: supervisor.StateStopped},
			{Name: "tags", State: supervisor.StateIdle, IdleStops: 3, StartTook: 40 * time.Millisecond,
				Upgrades: 2, Rollbacks: 1, RowMismatches: map[string]int64{"tag": 4, "(undeclared)": 1}}}
	})
	exp := parseExposition(t, string(m.appendText(nil)))
	got := map[string]float64{}
	for _, s := range exp.samples {
		got[s.name+s.key()] = s.value
	}
	for k, want := range map[string]float64{
		`yuzu_agent_plugin_state{plugin="fs",state="stopped"}`:                       1,
		`yuzu_agent_plugin_state{plugin="tags",state="idle"}`:                        1,
		`yuzu_agent_plugin_idle_stops_total{plugin="tags"}`:                          3,
		`yuzu_agent_plugin_idle_stops_total{plugin="fs"}`:                            0,
		`yuzu_agent_plugin_start_seconds{plugin="tags"}`:                             0.04,
		`yuzu_agent_plugin_upgrades_total{plugin="tags"}`:                            2,
		`yuzu_agent_plugin_rollbacks_total{plugin="tags"}`:                           1,
		`yuzu_agent_plugin_rollbacks_total{plugin="fs"}`:                             0,
		`yuzu_agent_plugin_rows_mismatched_total{plugin="tags",kind="tag"}`:          4,
		`yuzu_agent_plugin_rows_mismatched_total{plugin="tags",kind="(undeclared)"}`: 1,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
		}
	}
	if _, ok := got[`yuzu_agent_plugin_start_seconds{plugin="fs"}`]; ok {
		t.Error("a plugin that never started has a start time")
	}
	for k := range got {
		if strings.HasPrefix(k, `yuzu_agent_plugin_rows_mismatched_total{plugin="fs"`) {
			t.Errorf("a plugin that wrote no mismatching row has %s", k)
		}
	}
}

// A plugin in a box shows its limits and use; one without a box shows none.
func TestBoxSeries(t *testing.T) {
	m := New()
	m.WatchPlugins(func() []supervisor.Status {
		return []supervisor.Status{{Name: "bare"}, {Name: "tags", Boxed: true,
			Limits: limits.Limits{MemoryBytes: 512 << 20, CPUs: 1.5, Tasks: 256},
			Usage:  limits.Usage{Known: true, MemoryBytes: 10 << 20, MemoryPeak: 20 << 20, Tasks: 7, TasksPeak: 9, TasksRefused: 3, OOMKills: 1, CPUSeconds: 0.25}}}
	})
	exp := parseExposition(t, string(m.appendText(nil)))
	got := map[string]float64{}
	for _, s := range exp.samples {
		if strings.Contains(s.key(), "bare") && !lifeCycle[s.name] {
			t.Errorf("a plugin without a box has %s", s.name)
		}
		got[s.name+s.key()] = s.value
	}
	for k, want := range map[string]float64{
		`yuzu_agent_plugin_memory_limit_bytes{plugin="tags"}`:  512 << 20,
		`yuzu_agent_plugin_cpu_limit{plugin="tags"}`:           1.5,
		`yuzu_agent_plugin_tasks_limit{plugin="tags"}`:         256,
		`yuzu_agent_plugin_memory_bytes{plugin="tags"}`:        10 << 20,
		`yuzu_agent_plugin_memory_peak_bytes{plugin="tags"}`:   20 << 20,
		`yuzu_agent_plugin_tasks{plugin="tags"}`:               7,
		`yuzu_agent_plugin_tasks_peak{plugin="tags"}`:          9,
		`yuzu_agent_plugin_tasks_refused_total{plugin="tags"}`: 3,
		`yuzu_agent_plugin_oom_kills_total{plugin="tags"}`:     1,
		`yuzu_agent_plugin_cpu_seconds_total{plugin="tags"}`:   0.25,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
		}
	}
}
