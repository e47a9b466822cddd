// Package metrics is the agent's optional Prometheus endpoint: commands by plugin and
// status, command latency, plugin restarts, queue depth and reconnects to the fleet
// server. Every method works on a nil *Metrics and then does nothing, so the code that
// counts never asks whether metrics are on.
//
// The package writes the Prometheus text format itself rather than using the Prometheus
// client library: that library builds a global registry and runtime collectors when it
// is loaded, a start-up cost every yuzu-agent command would pay although only the
// fleet session with --metrics-listen ever serves metrics. Nothing here runs before
// New, and the runtime and process series are read only when scraped.
package metrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/yuzugo/yuzu/agent/supervisor"
)

// OtherPlugin is the plugin label of commands for plugins the agent does not have: a
// server naming arbitrary plugins must not create arbitrary label values.
const OtherPlugin = "_unknown"

// latencyBuckets are the upper bounds of the command latency histogram: from half a
// millisecond (a cached read) to the ten-minute ceiling on a command's timeout.
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 600}

// Metrics holds the agent's series.
type Metrics struct {
	commands   *counterVec
	latency    *histogramVec
	startWait  *histogramVec
	restarts   *counterVec
	queue      atomic.Int64
	reconnects atomic.Uint64
	connected  atomic.Int64
	// journalDown is 1 while the command journal cannot write.
	journalDown atomic.Int64
	// certNotAfter is the client certificate's end, Unix seconds (0: none known);
	// renewals counts certificate renewals by result.
	certNotAfter atomic.Int64
	renewOK      atomic.Uint64
	renewFailed  atomic.Uint64
	// updateOK and updateFailed count the agent's update checks.
	updateOK, updateFailed atomic.Uint64
	// status reads the supervisor's plugins for the restart counters (WatchPlugins).
	status func() []supervisor.Status
	// started stands in for the process start time: New runs during the agent's
	// start-up, and the series only has to change when the process is replaced.
	started time.Time
}

// New returns empty series.
func New() *Metrics {
	return &Metrics{
		commands: newCounterVec("yuzu_agent_commands_total",
			"Fleet commands answered, by plugin and final status (success, failure, timeout, rejected).",
			"plugin", "status"),
		latency: newHistogramVec("yuzu_agent_command_duration_seconds",
			"Time a plugin took to run a fleet command, from dispatch to its result.",
			latencyBuckets, "plugin"),
		startWait: newHistogramVec("yuzu_agent_command_start_wait_seconds",
			"Time a fleet command waited, its plugin slot in hand, for its start record to be on disk before it ran: the price of knowing after a crash that it ran.",
			latencyBuckets, "plugin"),
		restarts: newCounterVec("yuzu_agent_plugin_restarts_total",
			"Plugin child restarts after a crash, a hang or a failed start.",
			"plugin"),
		started: time.Now(),
	}
}

// Command counts one answered command and, when it ran, its latency.
func (m *Metrics) Command(plugin, status string, ran time.Duration) {
	if m == nil {
		return
	}
	m.commands.add(labelValues{plugin, status}, 1)
	if ran > 0 {
		m.latency.observe(labelValues{plugin}, ran.Seconds())
	}
}

// StartWait records how long a command waited for its start record.
func (m *Metrics) StartWait(plugin string, d time.Duration) {
	if m == nil {
		return
	}
	m.startWait.observe(labelValues{plugin}, d.Seconds())
}

// QueueAdd moves the queue depth by delta.
func (m *Metrics) QueueAdd(delta int) {
	if m == nil {
		return
	}
	m.queue.Add(int64(delta))
}

// Reconnect counts one reconnection attempt.
func (m *Metrics) Reconnect() {
	if m == nil {
		return
	}
	m.reconnects.Add(1)
}

// Connected records whether the command stream is up.
func (m *Metrics) Connected(up bool) {
	if m == nil {
		return
	}
	if up {
		m.connected.Store(1)
	} else {
		m.connected.Store(0)
	}
}

// Certificate records the end of the client certificate the agent presents.
func (m *Metrics) Certificate(notAfter time.Time) {
	if m == nil {
		return
	}
	m.certNotAfter.Store(notAfter.Unix())
}

// Renewal counts one certificate renewal, done or failed.
func (m *Metrics) Renewal(ok bool) {
	if m == nil {
		return
	}
	if ok {
		m.renewOK.Add(1)
	} else {
		m.renewFailed.Add(1)
	}
}

// UpdateCheck counts one check for a new agent version, answered or failed.
func (m *Metrics) UpdateCheck(ok bool) {
	if m == nil {
		return
	}
	if ok {
		m.updateOK.Add(1)
	} else {
		m.updateFailed.Add(1)
	}
}

// JournalWritable records whether the command journal writes.
func (m *Metrics) JournalWritable(ok bool) {
	if m == nil {
		return
	}
	if ok {
		m.journalDown.Store(0)
	} else {
		m.journalDown.Store(1)
	}
}

// Link is the state of the link to the fleet server, for `yuzu-agent status`.
type Link struct {
	Connected  bool
	Reconnects uint64
	QueueDepth int64
}

// Link returns the link's state now; the zero Link on a nil *Metrics.
func (m *Metrics) Link() Link {
	if m == nil {
		return Link{}
	}
	return Link{Connected: m.connected.Load() == 1, Reconnects: m.reconnects.Load(), QueueDepth: m.queue.Load()}
}

// WatchPlugins has the restart counters read, at each scrape, from the supervisor's
// status (its per-plugin count of deaths and failed starts, each of which is followed
// by a restart): nothing to miss between scrapes, and no goroutine. Call it before
// Serve.
func (m *Metrics) WatchPlugins(status func() []supervisor.Status) {
	if m == nil {
		return
	}
	m.status = status
}

// refreshRestarts copies the supervisor's restart counts into their series.
func (m *Metrics) refreshRestarts() {
	if m.status == nil {
		return
	}
	for _, st := range m.status() {
		m.restarts.set(labelValues{st.Name}, uint64(max(st.Restarts, 0)))
	}
}

// contentType is the Prometheus text exposition format, version 0.0.4.
const contentType = "text/plain; version=0.0.4; charset=utf-8"

// ServeHTTP writes every series in the text exposition format. On a nil *Metrics the
// page is empty.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	body := m.appendText(nil)
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(body)
}

// Serve answers GET /metrics on l until ctx ends.
func (m *Metrics) Serve(ctx context.Context, l net.Listener) error {
	mux := http.NewServeMux()
	// The method in the pattern also admits HEAD and answers other methods 405.
	mux.Handle("GET /metrics", m)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	})
	defer stop()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
