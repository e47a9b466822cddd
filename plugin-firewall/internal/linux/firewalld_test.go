package linux

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// fakeBus answers firewalld calls from a table. A reply function may block until the
// call's context ends, like a peer that never answers.
type fakeBus struct {
	activeZones func(ctx context.Context) ([]any, error)
	services    func(ctx context.Context, zone string) ([]any, error)
	calls       []string
	closed      bool
}

func (b *fakeBus) Call(ctx context.Context, method string, args ...any) ([]any, error) {
	b.calls = append(b.calls, method)
	switch method {
	case "getActiveZones":
		return b.activeZones(ctx)
	case "getServices":
		zone, _ := args[0].(string)
		return b.services(ctx, zone)
	}
	return nil, errors.New("unknown method")
}

func (b *fakeBus) Close() error { b.closed = true; return nil }

func reply(v ...any) func(context.Context) ([]any, error) {
	return func(context.Context) ([]any, error) { return v, nil }
}

func hang(ctx context.Context) ([]any, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

var twoZones = map[string]map[string][]string{
	"public":  {"interfaces": {"eth0"}},
	"trusted": {"sources": {"10.0.0.0/8"}},
}

func servicesOf(m map[string][]string) func(context.Context, string) ([]any, error) {
	return func(_ context.Context, zone string) ([]any, error) {
		s, ok := m[zone]
		if !ok {
			return nil, errors.New("INVALID_ZONE: " + zone)
		}
		return []any{s}, nil
	}
}

func TestQueryFirewalld(t *testing.T) {
	okServices := servicesOf(map[string][]string{"public": {"ssh", "https"}, "trusted": {}})
	tests := []struct {
		name       string
		connectErr error
		bus        *fakeBus
		want       FirewalldResult
	}{
		{"no bus", errors.New("dial unix /nonexistent: connect: no such file or directory"), nil,
			FirewalldResult{}},
		{"firewalld not running", nil, &fakeBus{activeZones: func(context.Context) ([]any, error) {
			return nil, errors.New("org.freedesktop.DBus.Error.ServiceUnknown")
		}}, FirewalldResult{}},
		{"complete", nil, &fakeBus{activeZones: reply(twoZones), services: okServices},
			FirewalldResult{Reachable: true, Complete: true, Zones: []Zone{
				{Name: "public", Services: []string{"ssh", "https"}}, {Name: "trusted", Services: []string{}},
			}}},
		{"no active zones", nil, &fakeBus{activeZones: reply(map[string]map[string][]string{})},
			FirewalldResult{Reachable: true, Complete: true, Zones: []Zone{}}},
		{"active zones of another type", nil, &fakeBus{activeZones: reply(map[string]string{"public": "eth0"})},
			FirewalldResult{Reachable: true}},
		{"active zones as a list", nil, &fakeBus{activeZones: reply([]string{"public"})},
			FirewalldResult{Reachable: true}},
		{"active zones with two values", nil, &fakeBus{activeZones: reply(twoZones, twoZones)},
			FirewalldResult{Reachable: true}},
		{"empty reply", nil, &fakeBus{activeZones: reply()}, FirewalldResult{Reachable: true}},
		{"nil reply value", nil, &fakeBus{activeZones: reply(nil)}, FirewalldResult{Reachable: true}},
		{"services call fails", nil, &fakeBus{activeZones: reply(twoZones),
			services: servicesOf(map[string][]string{"public": {"ssh"}})}, FirewalldResult{Reachable: true}},
		{"services of another type", nil, &fakeBus{activeZones: reply(twoZones),
			services: func(context.Context, string) ([]any, error) { return []any{int32(7)}, nil }},
			FirewalldResult{Reachable: true}},
		{"services as nested list", nil, &fakeBus{activeZones: reply(twoZones),
			services: func(context.Context, string) ([]any, error) { return []any{[][]string{{"ssh"}}}, nil }},
			FirewalldResult{Reachable: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			connect := func(context.Context) (busCaller, error) {
				if tt.connectErr != nil {
					return nil, tt.connectErr
				}
				return tt.bus, nil
			}
			got := queryFirewalld(context.Background(), time.Second, connect)
			if got.Reachable != tt.want.Reachable || got.Complete != tt.want.Complete ||
				!slices.EqualFunc(got.Zones, tt.want.Zones, func(a, b Zone) bool {
					return a.Name == b.Name && slices.Equal(a.Services, b.Services)
				}) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if tt.bus != nil && !tt.bus.closed {
				t.Error("connection not closed")
			}
		})
	}
}

func TestQueryFirewalldBudget(t *testing.T) {
	// getActiveZones never answers: the rung gives up within its budget and does
	// not count as reachable.
	bus := &fakeBus{activeZones: hang}
	start := time.Now()
	got := queryFirewalld(context.Background(), 30*time.Millisecond,
		func(context.Context) (busCaller, error) { return bus, nil })
	if got.Reachable {
		t.Errorf("hanging getActiveZones counted as reachable: %+v", got)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v with a 30ms budget", d)
	}

	// getServices never answers: reachable but incomplete, within the same budget.
	bus = &fakeBus{activeZones: reply(twoZones), services: func(ctx context.Context, _ string) ([]any, error) { return hang(ctx) }}
	start = time.Now()
	got = queryFirewalld(context.Background(), 30*time.Millisecond,
		func(context.Context) (busCaller, error) { return bus, nil })
	if !got.Reachable || got.Complete {
		t.Errorf("hanging getServices: %+v", got)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v with a 30ms budget", d)
	}

	// The budget is shared: a slow first zone leaves the second one no time, so the
	// total never exceeds it.
	calls := 0
	bus = &fakeBus{activeZones: reply(twoZones), services: func(ctx context.Context, _ string) ([]any, error) {
		calls++
		if calls == 1 {
			select {
			case <-time.After(40 * time.Millisecond):
			case <-ctx.Done():
			}
			return []any{[]string{"ssh"}}, nil
		}
		return hang(ctx)
	}}
	start = time.Now()
	got = queryFirewalld(context.Background(), 50*time.Millisecond,
		func(context.Context) (busCaller, error) { return bus, nil })
	if !got.Reachable || got.Complete {
		t.Errorf("shared budget: %+v", got)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v with a 50ms budget", d)
	}

	// The connection attempt itself is given the budget's context.
	var connectDeadline time.Time
	queryFirewalld(context.Background(), time.Minute, func(ctx context.Context) (busCaller, error) {
		connectDeadline, _ = ctx.Deadline()
		return nil, errors.New("no bus")
	})
	if connectDeadline.IsZero() || time.Until(connectDeadline) > time.Minute {
		t.Errorf("connect deadline %v", connectDeadline)
	}
}

func TestDecodeActiveZonesSorted(t *testing.T) {
	m := map[string]map[string][]string{"z": nil, "a": nil, "m": {"interfaces": {"x"}}}
	for range 20 { // map order varies between runs; the answer must not
		got, ok := decodeActiveZones([]any{m})
		if !ok || !slices.Equal(got, []string{"a", "m", "z"}) {
			t.Fatalf("got %q, %v", got, ok)
		}
	}
}
