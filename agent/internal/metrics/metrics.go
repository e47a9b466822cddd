// Package metrics is the agent's optional Prometheus endpoint: commands by plugin and
// status, command latency, plugin restarts, queue depth and reconnects to the fleet
// server. Every method works on a nil *Metrics and then does nothing, so the code that
// counts never asks whether metrics are on.
package metrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/yuzugo/yuzu/agent/supervisor"
)

// OtherPlugin is the plugin label of commands for plugins the agent does not have: a
// server naming arbitrary plugins must not create arbitrary label values.
const OtherPlugin = "_unknown"

// Metrics holds the agent's collectors in a registry of its own.
type Metrics struct {
	reg        *prometheus.Registry
	commands   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	restarts   *prometheus.CounterVec
	queue      prometheus.Gauge
	reconnects prometheus.Counter
	connected  prometheus.Gauge
}

// New returns the collectors, registered with the Go runtime and process collectors.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yuzu_agent_commands_total",
			Help: "Fleet commands answered, by plugin and final status (success, failure, timeout, rejected).",
		}, []string{"plugin", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "yuzu_agent_command_duration_seconds",
			Help:    "Time a plugin took to run a fleet command, from dispatch to its result.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 600},
		}, []string{"plugin"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yuzu_agent_plugin_restarts_total",
			Help: "Plugin child restarts after a crash, a hang or a failed start.",
		}, []string{"plugin"}),
		queue: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "yuzu_agent_queue_depth",
			Help: "Fleet commands accepted but not yet running (waiting for their stagger or delay, or for a plugin slot).",
		}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yuzu_agent_reconnects_total",
			Help: "Connection attempts to the fleet server after the first.",
		}),
		connected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "yuzu_agent_connected",
			Help: "1 while the agent holds a registered command stream to the fleet server.",
		}),
	}
	m.reg.MustRegister(m.commands, m.latency, m.restarts, m.queue, m.reconnects, m.connected,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the registry the collectors are in.
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.reg
}

// Command counts one answered command and, when it ran, its latency.
func (m *Metrics) Command(plugin, status string, ran time.Duration) {
	if m == nil {
		return
	}
	m.commands.WithLabelValues(plugin, status).Inc()
	if ran > 0 {
		m.latency.WithLabelValues(plugin).Observe(ran.Seconds())
	}
}

// QueueAdd moves the queue depth by delta.
func (m *Metrics) QueueAdd(delta int) {
	if m == nil {
		return
	}
	m.queue.Add(float64(delta))
}

// Reconnect counts one reconnection attempt.
func (m *Metrics) Reconnect() {
	if m == nil {
		return
	}
	m.reconnects.Inc()
}

// Connected records whether the command stream is up.
func (m *Metrics) Connected(up bool) {
	if m == nil {
		return
	}
	if up {
		m.connected.Set(1)
	} else {
		m.connected.Set(0)
	}
}

// WatchPlugins counts restarts from the supervisor's state changes until the
// subscription ends: a start that follows a backoff or the failed state is a restart.
// Known plugin names are labels at once, so their counters show 0 before any restart.
func (m *Metrics) WatchPlugins(names []string, sub *supervisor.Subscription) {
	if m == nil {
		return
	}
	for _, n := range names {
		m.restarts.WithLabelValues(n)
	}
	for c := range sub.C {
		if c.To == supervisor.StateStarting && (c.From == supervisor.StateBackoff || c.From == supervisor.StateFailed) {
			m.restarts.WithLabelValues(c.Plugin).Inc()
		}
	}
}

// Serve answers GET /metrics on l until ctx ends.
func (m *Metrics) Serve(ctx context.Context, l net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
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
