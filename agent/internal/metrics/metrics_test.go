package metrics

import (
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/yuzugo/yuzu/agent/supervisor"
)

func TestNilIsOff(t *testing.T) {
	var m *Metrics
	m.Command("p", "success", time.Second)
	m.QueueAdd(1)
	m.Reconnect()
	m.Connected(true)
	if m.Registry() != nil {
		t.Error("a nil Metrics has a registry")
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
	ch := make(chan supervisor.StateChange, 4)
	ch <- supervisor.StateChange{Plugin: "tags", From: supervisor.StateStopped, To: supervisor.StateStarting}
	ch <- supervisor.StateChange{Plugin: "tags", From: supervisor.StateBackoff, To: supervisor.StateStarting}
	ch <- supervisor.StateChange{Plugin: "tags", From: supervisor.StateFailed, To: supervisor.StateStarting}
	close(ch)
	m.WatchPlugins([]string{"tags", "other"}, &supervisor.Subscription{C: ch})

	got := map[string]float64{}
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "yuzu_agent_") {
			continue
		}
		for _, mt := range f.GetMetric() {
			got[f.GetName()+labels(mt)] = value(mt)
		}
	}
	for k, want := range map[string]float64{
		`yuzu_agent_commands_total{plugin="tags",status="success"}`:      2,
		`yuzu_agent_commands_total{plugin="_unknown",status="rejected"}`: 1,
		`yuzu_agent_command_duration_seconds{plugin="tags"}`:             2, // observations
		`yuzu_agent_plugin_restarts_total{plugin="tags"}`:                2, // the first start is not a restart
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
}

func labels(m *dto.Metric) string {
	if len(m.GetLabel()) == 0 {
		return ""
	}
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+`="`+l.GetValue()+`"`)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return -1
}
