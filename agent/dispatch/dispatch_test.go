package dispatch

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/sdk"
)

// gate is an Executor whose commands block until released, counting how many run.
type gate struct {
	release chan struct{}
	running atomic.Int32
	peak    atomic.Int32
}

func (g *gate) Execute(ctx context.Context, req supervisor.Request, onRows func([]string) error) (sdk.Result, error) {
	n := g.running.Add(1)
	defer g.running.Add(-1)
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			break
		}
	}
	select {
	case <-g.release:
	case <-ctx.Done():
		return sdk.Result{}, ctx.Err()
	}
	_ = onRows([]string{"ran|" + req.Plugin})
	return sdk.Done(), nil
}

func TestConcurrencyBoundAndQueueFull(t *testing.T) {
	g := &gate{release: make(chan struct{})}
	d := New(g, Options{PerPlugin: 2, QueueSize: 1})
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for i := 0; i < 3; i++ { // two run, one waits in the queue
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := d.Do(context.Background(), Request{Request: supervisor.Request{Plugin: "p", Timeout: time.Minute}}, func([]string) error { return nil })
			errs <- err
		}()
	}
	waitFor(t, func() bool { return g.running.Load() == 2 && len(d.queue) == 1 })
	if _, err := d.Do(context.Background(), Request{Request: supervisor.Request{Plugin: "p"}}, nil); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("fourth command: err = %v, want ErrQueueFull", err)
	}
	if ErrQueueFull.Error() != "agent overloaded: command queue full" {
		t.Errorf("message %q", ErrQueueFull)
	}
	close(g.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("queued command failed: %v", err)
		}
	}
	if g.peak.Load() != 2 {
		t.Errorf("peak concurrency %d, want 2", g.peak.Load())
	}
}

func TestOtherPluginsAreNotBlocked(t *testing.T) {
	g := &gate{release: make(chan struct{})}
	d := New(g, Options{PerPlugin: 1, QueueSize: 5})
	go func() {
		_, _ = d.Do(context.Background(), Request{Request: supervisor.Request{Plugin: "busy"}}, func([]string) error { return nil })
	}()
	waitFor(t, func() bool { return g.running.Load() == 1 })
	done := make(chan error, 1)
	go func() {
		_, err := d.Do(context.Background(), Request{Request: supervisor.Request{Plugin: "other"}}, func([]string) error { return nil })
		done <- err
	}()
	waitFor(t, func() bool { return g.running.Load() == 2 })
	close(g.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestQueuedCommandTimesOut(t *testing.T) {
	g := &gate{release: make(chan struct{})}
	defer close(g.release)
	d := New(g, Options{PerPlugin: 1, QueueSize: 5})
	go func() {
		_, _ = d.Do(context.Background(), Request{Request: supervisor.Request{Plugin: "p"}}, func([]string) error { return nil })
	}()
	waitFor(t, func() bool { return g.running.Load() == 1 })
	_, err := d.Do(context.Background(), Request{Request: supervisor.Request{Plugin: "p", Timeout: 50 * time.Millisecond}}, nil)
	var te *supervisor.WaitTimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want a WaitTimeoutError", err)
	}
	if want := "command timed out after 0.05s waiting for a free slot on plugin p; it did not run"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	if len(d.queue) != 0 {
		t.Errorf("queue holds %d after the timeout, want 0", len(d.queue))
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
