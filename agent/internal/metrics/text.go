package metrics

import (
	"cmp"
	"maps"
	"math"
	"runtime"
	rtmetrics "runtime/metrics"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/yuzugo/yuzu/agent/supervisor"
)

// labelValues are the label values of one series, in the order of its family's label
// names. No family here has more than two labels, and a fixed-size array is a map key
// that costs no allocation on the hot path (one Command per fleet command).
type labelValues [2]string

// sanitize makes the values valid UTF-8, which the exposition format requires; it
// is done before the map lookup so two spellings of a broken value are one series.
func (lv labelValues) sanitize() labelValues {
	for i, v := range lv {
		if !utf8.ValidString(v) {
			lv[i] = strings.ToValidUTF8(v, "\uFFFD")
		}
	}
	return lv
}

func compareLabels(a, b labelValues) int {
	if c := cmp.Compare(a[0], b[0]); c != 0 {
		return c
	}
	return cmp.Compare(a[1], b[1])
}

// counterVec is a counter family with labels. One mutex guards the map and the
// values: an increment is a lock and a map lookup, and a scrape sees every series
// at the same moment.
type counterVec struct {
	name, help string
	labels     []string
	mu         sync.Mutex
	series     map[labelValues]uint64
}

func newCounterVec(name, help string, labels ...string) *counterVec {
	return &counterVec{name: name, help: help, labels: labels, series: map[labelValues]uint64{}}
}

// set gives the series the value v, creating it if it is new: for a count kept
// elsewhere and copied in at each scrape.
func (c *counterVec) set(lv labelValues, v uint64) {
	lv = lv.sanitize()
	c.mu.Lock()
	c.series[lv] = v
	c.mu.Unlock()
}

// add adds n to the series, creating it (at n) if it is new.
func (c *counterVec) add(lv labelValues, n uint64) {
	lv = lv.sanitize()
	c.mu.Lock()
	c.series[lv] += n
	c.mu.Unlock()
}

func (c *counterVec) appendText(b []byte) []byte {
	type sample struct {
		lv labelValues
		v  uint64
	}
	c.mu.Lock()
	samples := make([]sample, 0, len(c.series))
	for lv, v := range c.series {
		samples = append(samples, sample{lv, v})
	}
	c.mu.Unlock()
	// A family without series is left out, as the Prometheus client library does.
	if len(samples) == 0 {
		return b
	}
	slices.SortFunc(samples, func(x, y sample) int { return compareLabels(x.lv, y.lv) })
	b = appendHeader(b, c.name, c.help, "counter")
	for _, s := range samples {
		b = append(b, c.name...)
		b = appendLabels(b, c.labels, s.lv, "")
		b = append(b, ' ')
		b = strconv.AppendUint(b, s.v, 10)
		b = append(b, '\n')
	}
	return b
}

// histogramVec is a histogram family with labels, guarded like counterVec.
type histogramVec struct {
	name, help string
	labels     []string
	bounds     []float64 // sorted upper bounds, without +Inf
	mu         sync.Mutex
	series     map[labelValues]*histogram
}

// histogram keeps one count per bucket (not cumulative: an observation touches one
// bucket) and adds them up when written.
type histogram struct {
	buckets []uint64 // len(bounds)+1; the last is above every bound
	count   uint64
	sum     float64
}

func newHistogramVec(name, help string, bounds []float64, labels ...string) *histogramVec {
	return &histogramVec{name: name, help: help, labels: labels, bounds: bounds, series: map[labelValues]*histogram{}}
}

func (h *histogramVec) observe(lv labelValues, v float64) {
	lv = lv.sanitize()
	// The first bound >= v: a bucket counts observations less than or equal to it.
	i := sort.SearchFloat64s(h.bounds, v)
	h.mu.Lock()
	s := h.series[lv]
	if s == nil {
		s = &histogram{buckets: make([]uint64, len(h.bounds)+1)}
		h.series[lv] = s
	}
	s.buckets[i]++
	s.count++
	s.sum += v
	h.mu.Unlock()
}

func (h *histogramVec) appendText(b []byte) []byte {
	type sample struct {
		lv labelValues
		h  histogram
	}
	h.mu.Lock()
	samples := make([]sample, 0, len(h.series))
	for lv, s := range h.series {
		samples = append(samples, sample{lv, histogram{buckets: slices.Clone(s.buckets), count: s.count, sum: s.sum}})
	}
	h.mu.Unlock()
	if len(samples) == 0 {
		return b
	}
	slices.SortFunc(samples, func(x, y sample) int { return compareLabels(x.lv, y.lv) })
	b = appendHeader(b, h.name, h.help, "histogram")
	for _, s := range samples {
		var cum uint64
		for i, n := range s.h.buckets {
			cum += n
			le := "+Inf"
			if i < len(h.bounds) {
				le = formatFloat(h.bounds[i])
			}
			b = append(b, h.name...)
			b = append(b, "_bucket"...)
			b = appendLabels(b, h.labels, s.lv, le)
			b = append(b, ' ')
			b = strconv.AppendUint(b, cum, 10)
			b = append(b, '\n')
		}
		b = append(b, h.name...)
		b = append(b, "_sum"...)
		b = appendLabels(b, h.labels, s.lv, "")
		b = append(b, ' ')
		b = append(b, formatFloat(s.h.sum)...)
		b = append(b, '\n')
		b = append(b, h.name...)
		b = append(b, "_count"...)
		b = appendLabels(b, h.labels, s.lv, "")
		b = append(b, ' ')
		b = strconv.AppendUint(b, s.h.count, 10)
		b = append(b, '\n')
	}
	return b
}

// family is one metric family, written by text.
type family struct {
	name string
	text func([]byte) []byte
}

// appendText appends every family in the text exposition format, sorted by name.
func (m *Metrics) appendText(b []byte) []byte {
	if m == nil {
		return b
	}
	gauge := func(name, help, value string) family {
		return family{name, func(b []byte) []byte { return appendSingle(b, name, help, "gauge", value) }}
	}
	counter := func(name, help, value string) family {
		return family{name, func(b []byte) []byte { return appendSingle(b, name, help, "counter", value) }}
	}
	m.refreshRestarts()
	families := append(m.boxFamilies(), m.stateFamilies()...)
	families = append(families, []family{
		{m.commands.name, m.commands.appendText},
		{m.latency.name, m.latency.appendText},
		{m.startWait.name, m.startWait.appendText},
		{m.restarts.name, m.restarts.appendText},
		gauge("yuzu_agent_queue_depth",
			"Fleet commands accepted but not yet running (waiting for their stagger or delay, or for a plugin slot).",
			strconv.FormatInt(m.queue.Load(), 10)),
		counter("yuzu_agent_reconnects_total",
			"Connection attempts to the fleet server after the first.",
			strconv.FormatUint(m.reconnects.Load(), 10)),
		gauge("yuzu_agent_connected",
			"1 while the agent holds a registered command stream to the fleet server.",
			strconv.FormatInt(m.connected.Load(), 10)),
		gauge("yuzu_agent_journal_writable",
			"1 while the command journal writes; 0 while it cannot (new commands are refused, answers held).",
			strconv.FormatInt(1-m.journalDown.Load(), 10)),
		gauge("yuzu_agent_client_certificate_expiry_timestamp_seconds",
			"When the client certificate the agent presents expires, seconds since the Unix epoch (0: none).",
			strconv.FormatInt(m.certNotAfter.Load(), 10)),
		family{"yuzu_agent_certificate_renewals_total", func(b []byte) []byte {
			const name = "yuzu_agent_certificate_renewals_total"
			b = append(b, "# HELP "+name+" Renewals of the enrolled client certificate, by result.\n# TYPE "+name+" counter\n"...)
			b = append(b, name+`{result="failed"} `...)
			b = strconv.AppendUint(b, m.renewFailed.Load(), 10)
			b = append(b, "\n"+name+`{result="ok"} `...)
			b = strconv.AppendUint(b, m.renewOK.Load(), 10)
			return append(b, '\n')
		}},
		family{"yuzu_agent_update_checks_total", func(b []byte) []byte {
			const name = "yuzu_agent_update_checks_total"
			b = append(b, "# HELP "+name+" Checks for a new agent version, by result (answered or failed).\n# TYPE "+name+" counter\n"...)
			b = append(b, name+`{result="failed"} `...)
			b = strconv.AppendUint(b, m.updateFailed.Load(), 10)
			b = append(b, "\n"+name+`{result="ok"} `...)
			b = strconv.AppendUint(b, m.updateOK.Load(), 10)
			return append(b, '\n')
		}},
		gauge("process_start_time_seconds",
			"Start time of the process since unix epoch in seconds.",
			formatFloat(float64(m.started.UnixMicro())/1e6)),
		gauge("go_goroutines",
			"Number of goroutines that currently exist.",
			strconv.Itoa(runtime.NumGoroutine())),
	}...)
	// runtime/metrics reads these without stopping the world, unlike
	// runtime.ReadMemStats.
	rt := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/total:bytes"}}
	rtmetrics.Read(rt)
	if v := rt[0].Value; v.Kind() == rtmetrics.KindUint64 {
		families = append(families, gauge("go_memstats_heap_alloc_bytes",
			"Number of heap bytes allocated and currently in use.",
			strconv.FormatUint(v.Uint64(), 10)))
	}
	if v := rt[1].Value; v.Kind() == rtmetrics.KindUint64 {
		families = append(families, gauge("go_memstats_sys_bytes",
			"Number of bytes obtained from system.",
			strconv.FormatUint(v.Uint64(), 10)))
	}
	if rss, ok := residentBytes(); ok {
		families = append(families, gauge("process_resident_memory_bytes",
			"Resident memory size in bytes.",
			strconv.FormatUint(rss, 10)))
	}
	slices.SortFunc(families, func(x, y family) int { return cmp.Compare(x.name, y.name) })
	for _, f := range families {
		b = f.text(b)
	}
	return b
}

// boxFamilies are the per-plugin series of the plugins' boxes: limits and what the
// current (or last) child uses and used (docs/agent.md "Resource limits"). A plugin
// without a box, or whose counters cannot be read, has none of them.
func (m *Metrics) boxFamilies() []family {
	if m.status == nil {
		return nil
	}
	sts := slices.DeleteFunc(m.status(), func(st supervisor.Status) bool { return !st.Boxed || !st.Usage.Known })
	if len(sts) == 0 {
		return nil
	}
	type series struct {
		name, help, kind string
		value            func(st *supervisor.Status) (float64, bool)
	}
	used := func(v int64) (float64, bool) { return float64(v), v >= 0 }
	// A zero limit is one the system could not enforce: no series claims it.
	limit := func(v float64) (float64, bool) { return v, v > 0 }
	all := []series{
		{"yuzu_agent_plugin_memory_limit_bytes", "Memory limit of a plugin's box.", "gauge",
			func(st *supervisor.Status) (float64, bool) { return limit(float64(st.Limits.MemoryBytes)) }},
		{"yuzu_agent_plugin_cpu_limit", "CPU limit of a plugin's box, in CPUs.", "gauge",
			func(st *supervisor.Status) (float64, bool) { return limit(st.Limits.CPUs) }},
		{"yuzu_agent_plugin_tasks_limit", "Task (process and thread) limit of a plugin's box.", "gauge",
			func(st *supervisor.Status) (float64, bool) { return limit(float64(st.Limits.Tasks)) }},
		{"yuzu_agent_plugin_memory_bytes", "Memory a plugin's box uses now.", "gauge",
			func(st *supervisor.Status) (float64, bool) { return used(st.Usage.MemoryBytes) }},
		{"yuzu_agent_plugin_memory_peak_bytes", "Most memory a plugin's box used since its child started (0 where the kernel keeps no peak).", "gauge",
			func(st *supervisor.Status) (float64, bool) { return used(st.Usage.MemoryPeak) }},
		{"yuzu_agent_plugin_tasks", "Tasks in a plugin's box now.", "gauge",
			func(st *supervisor.Status) (float64, bool) { return used(st.Usage.Tasks) }},
		{"yuzu_agent_plugin_tasks_peak", "Most tasks in a plugin's box since its child started (0 where the kernel keeps no peak).", "gauge",
			func(st *supervisor.Status) (float64, bool) { return used(st.Usage.TasksPeak) }},
		{"yuzu_agent_plugin_tasks_refused_total", "Forks refused at a plugin box's task limit, for its current child.", "counter",
			func(st *supervisor.Status) (float64, bool) { return used(st.Usage.TasksRefused) }},
		{"yuzu_agent_plugin_oom_kills_total", "Processes killed at a plugin box's memory limit (on Windows: allocations refused there), for its current child.", "counter",
			func(st *supervisor.Status) (float64, bool) { return used(st.Usage.OOMKills) }},
		{"yuzu_agent_plugin_cpu_seconds_total", "CPU time a plugin's current child and its processes used.", "counter",
			func(st *supervisor.Status) (float64, bool) { return st.Usage.CPUSeconds, true }},
	}
	names := []string{"plugin"}
	var out []family
	for _, s := range all {
		out = append(out, family{s.name, func(b []byte) []byte {
			b = appendHeader(b, s.name, s.help, s.kind)
			for i := range sts {
				st := &sts[i]
				v, ok := s.value(st)
				if !ok {
					continue
				}
				b = append(b, s.name...)
				b = appendLabels(b, names, labelValues{st.Name}.sanitize(), "")
				b = append(b, ' ')
				b = append(b, formatFloat(v)...)
				b = append(b, '\n')
			}
			return b
		}})
	}
	return out
}

// stateFamilies are the per-plugin series of each plugin's life cycle: its state now
// (one series per plugin, 1, labelled with the state: idle says stopped after its idle
// period or not started yet, and starts on its next command), its idle stops, and how
// long its last start took, which is what a command for an idle plugin waits.
func (m *Metrics) stateFamilies() []family {
	if m.status == nil {
		return nil
	}
	sts := m.status()
	if len(sts) == 0 {
		return nil
	}
	perPlugin := func(name, help, kind string, value func(st *supervisor.Status) (float64, bool)) family {
		return family{name, func(b []byte) []byte {
			b = appendHeader(b, name, help, kind)
			for i := range sts {
				v, ok := value(&sts[i])
				if !ok {
					continue
				}
				b = append(b, name...)
				b = appendLabels(b, []string{"plugin"}, labelValues{sts[i].Name}.sanitize(), "")
				b = append(b, ' ')
				b = append(b, formatFloat(v)...)
				b = append(b, '\n')
			}
			return b
		}}
	}
	const stateName = "yuzu_agent_plugin_state"
	state := family{stateName, func(b []byte) []byte {
		b = appendHeader(b, stateName, "A plugin's state now, as the label state (stopped, idle, starting, running, backoff, failed, refused); always 1.", "gauge")
		for i := range sts {
			b = append(b, stateName...)
			b = appendLabels(b, []string{"plugin", "state"}, labelValues{sts[i].Name, string(sts[i].State)}.sanitize(), "")
			b = append(b, " 1\n"...)
		}
		return b
	}}
	out := []family{
		state,
		perPlugin("yuzu_agent_plugin_idle_stops_total", "Plugin children stopped after their idle period (no failure; the next command starts one).", "counter",
			func(st *supervisor.Status) (float64, bool) { return float64(st.IdleStops), true }),
		perPlugin("yuzu_agent_plugin_upgrades_total", "Builds of a plugin this agent took from its catalog while it ran.", "counter",
			func(st *supervisor.Status) (float64, bool) { return float64(st.Upgrades), true }),
		perPlugin("yuzu_agent_plugin_rollbacks_total", "Builds of a plugin this agent rolled back: a start failed, or it crashed 3 times within a minute, on probation.", "counter",
			func(st *supervisor.Status) (float64, bool) { return float64(st.Rollbacks), true }),
	}
	// Rows that depart from their declaration, by plugin and declared kind; only
	// plugins that wrote one have a series.
	if slices.ContainsFunc(sts, func(st supervisor.Status) bool { return len(st.RowMismatches) > 0 }) {
		const name = "yuzu_agent_plugin_rows_mismatched_total"
		out = append(out, family{name, func(b []byte) []byte {
			b = appendHeader(b, name, "Rows a plugin wrote that depart from its action's declaration (kind, field count, typed fields), by declared kind; they are relayed all the same.", "counter")
			for i := range sts {
				for _, kind := range slices.Sorted(maps.Keys(sts[i].RowMismatches)) {
					b = append(b, name...)
					b = appendLabels(b, []string{"plugin", "kind"}, labelValues{sts[i].Name, kind}.sanitize(), "")
					b = append(b, ' ')
					b = append(b, strconv.FormatInt(sts[i].RowMismatches[kind], 10)...)
					b = append(b, '\n')
				}
			}
			return b
		}})
	}
	// Only plugins that have started have a start time; a family without samples is
	// left out.
	if slices.ContainsFunc(sts, func(st supervisor.Status) bool { return st.StartTook > 0 }) {
		out = append(out, perPlugin("yuzu_agent_plugin_start_seconds", "How long a plugin's last start took, from the binary's check to Configure: the wait of a command for an idle plugin.", "gauge",
			func(st *supervisor.Status) (float64, bool) { return st.StartTook.Seconds(), st.StartTook > 0 }))
	}
	return out
}

// appendSingle appends a family of one series without labels.
func appendSingle(b []byte, name, help, kind, value string) []byte {
	b = appendHeader(b, name, help, kind)
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, value...)
	return append(b, '\n')
}

func appendHeader(b []byte, name, help, kind string) []byte {
	b = append(b, "# HELP "...)
	b = append(b, name...)
	b = append(b, ' ')
	for i := 0; i < len(help); i++ {
		switch c := help[i]; c {
		case '\\':
			b = append(b, `\\`...)
		case '\n':
			b = append(b, `\n`...)
		default:
			b = append(b, c)
		}
	}
	b = append(b, "\n# TYPE "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, kind...)
	return append(b, '\n')
}

// appendLabels appends {name="value",...} for the family's labels, then le when it is
// not empty (a histogram bucket); nothing when there is no label at all.
func appendLabels(b []byte, names []string, lv labelValues, le string) []byte {
	if len(names) == 0 && le == "" {
		return b
	}
	b = append(b, '{')
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendLabel(b, n, lv[i])
	}
	if le != "" {
		if len(names) > 0 {
			b = append(b, ',')
		}
		b = appendLabel(b, "le", le)
	}
	return append(b, '}')
}

// appendLabel appends name="value" with the value's backslashes, double quotes and
// line feeds escaped, the three characters the format escapes.
func appendLabel(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, '=', '"')
	for i := 0; i < len(value); i++ {
		switch c := value[i]; c {
		case '\\':
			b = append(b, `\\`...)
		case '"':
			b = append(b, `\"`...)
		case '\n':
			b = append(b, `\n`...)
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// formatFloat writes a float as the Prometheus client library does: the shortest
// representation that reads back exactly, and +Inf, -Inf and NaN by those names.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
