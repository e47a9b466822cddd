package dispatch

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/sdk"
)

// recorder is an Executor that remembers what reached it and, when told, whether the
// command's OnStart had run by then.
type recorder struct {
	release chan struct{} // nil: answer at once
	reached atomic.Int32
	seen    chan supervisor.Request
}

func (r *recorder) Execute(ctx context.Context, req supervisor.Request, _ func([]string) error) (sdk.Result, error) {
	r.reached.Add(1)
	if r.seen != nil {
		r.seen <- req
	}
	if r.release != nil {
		select {
		case <-r.release:
		case <-ctx.Done():
			return sdk.Result{}, ctx.Err()
		}
	}
	return sdk.Done(), nil
}

func req(plugin string) Request { return Request{Request: supervisor.Request{Plugin: plugin}} }

// A command whose expiry passes while it queues for a slot is refused by the
// dispatcher with ErrExpired when the slot comes: it never reaches the plugin and its
// OnStart is not called.
func TestExpiredWhileQueuedNeverStarts(t *testing.T) {
	r := &recorder{release: make(chan struct{})}
	d := New(r, Options{PerPlugin: 1, QueueSize: 5})
	first := make(chan error, 1)
	go func() {
		_, err := d.Do(context.Background(), req("p"), nil)
		first <- err
	}()
	waitFor(t, func() bool { return r.reached.Load() == 1 })

	var starts atomic.Int32
	late := req("p")
	late.Expiry = time.Now().Add(20 * time.Millisecond)
	late.OnStart = func() error { starts.Add(1); return nil }
	second := make(chan error, 1)
	go func() {
		_, err := d.Do(context.Background(), late, nil)
		second <- err
	}()
	waitFor(t, func() bool { return len(d.queue) == 1 })
	for !time.Now().After(late.Expiry) {
		time.Sleep(5 * time.Millisecond)
	}
	close(r.release)
	if err := <-first; err != nil {
		t.Fatalf("first command: %v", err)
	}
	if err := <-second; !errors.Is(err, ErrExpired) {
		t.Fatalf("expired command: err = %v, want ErrExpired", err)
	}
	if ErrExpired.Error() != "command expired" {
		t.Errorf("ErrExpired says %q; the fleet answers %q", ErrExpired, "command expired")
	}
	if n := r.reached.Load(); n != 1 {
		t.Errorf("%d commands reached the plugin, want 1 (the expired one must not)", n)
	}
	if n := starts.Load(); n != 0 {
		t.Errorf("OnStart of the expired command called %d times, want 0", n)
	}
	// An expiry already past at Do is refused the same, with a free slot.
	gone := req("q")
	gone.Expiry = time.Now().Add(-time.Second)
	gone.OnStart = func() error { starts.Add(1); return nil }
	if _, err := d.Do(context.Background(), gone, nil); !errors.Is(err, ErrExpired) || starts.Load() != 0 || r.reached.Load() != 1 {
		t.Errorf("past expiry: err = %v, %d starts, %d reached", err, starts.Load(), r.reached.Load())
	}
	// An expiry still ahead does not stop a command.
	ahead := req("q")
	ahead.Expiry = time.Now().Add(time.Minute)
	if _, err := d.Do(context.Background(), ahead, nil); err != nil {
		t.Errorf("expiry ahead: %v", err)
	}
}

// OnStart runs exactly once for a command that goes to its plugin, before the plugin
// has it, and never for one refused on the way (queue full, cancelled or out of
// time while it queued).
func TestOnStartOnlyWhenTheCommandStarts(t *testing.T) {
	r := &recorder{release: make(chan struct{}), seen: make(chan supervisor.Request, 4)}
	d := New(r, Options{PerPlugin: 1, QueueSize: 1})
	var starts, startsAtReach atomic.Int32
	running := req("p")
	running.OnStart = func() error { starts.Add(1); return nil }
	done := make(chan error, 1)
	go func() {
		_, err := d.Do(context.Background(), running, nil)
		done <- err
	}()
	<-r.seen
	startsAtReach.Store(starts.Load())

	var refused atomic.Int32
	count := func() error { refused.Add(1); return nil }
	// Waits in the queue until its caller gives up.
	ctx, cancel := context.WithCancel(context.Background())
	queued := req("p")
	queued.OnStart = count
	gaveUp := make(chan error, 1)
	go func() {
		_, err := d.Do(ctx, queued, nil)
		gaveUp <- err
	}()
	waitFor(t, func() bool { return len(d.queue) == 1 })
	// The queue is full: refused at once.
	full := req("p")
	full.OnStart = count
	if _, err := d.Do(context.Background(), full, nil); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("queue full: err = %v", err)
	}
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled in the queue: err = %v", err)
	}
	// Waits in the queue past its deadline.
	timedOut := req("p")
	timedOut.Timeout = 30 * time.Millisecond
	timedOut.OnStart = count
	var wt *supervisor.WaitTimeoutError
	if _, err := d.Do(context.Background(), timedOut, nil); !errors.As(err, &wt) {
		t.Fatalf("queued past its deadline: err = %v, want a WaitTimeoutError", err)
	}
	close(r.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if startsAtReach.Load() != 1 {
		t.Errorf("OnStart had run %d times when the plugin got the command, want 1", startsAtReach.Load())
	}
	if starts.Load() != 1 {
		t.Errorf("OnStart ran %d times, want 1", starts.Load())
	}
	if refused.Load() != 0 {
		t.Errorf("OnStart of refused commands ran %d times, want 0", refused.Load())
	}
}

// The deadline is fixed once: SetDeadline starts the clock at Timeout from then, a
// second call and Do keep it, and the plugin gets that same deadline.
func TestDeadlineFixedOnce(t *testing.T) {
	r := &recorder{seen: make(chan supervisor.Request, 1)}
	d := New(r, Options{})
	q := req("p")
	q.Timeout = time.Hour
	before := time.Now()
	first := q.SetDeadline()
	if first.Before(before.Add(time.Hour)) || first.After(time.Now().Add(time.Hour)) {
		t.Fatalf("deadline %v, want an hour after %v", first, before)
	}
	time.Sleep(2 * time.Millisecond)
	if again := q.SetDeadline(); !again.Equal(first) {
		t.Errorf("second SetDeadline moved the deadline: %v then %v", first, again)
	}
	if _, err := d.Do(context.Background(), q, nil); err != nil {
		t.Fatal(err)
	}
	if got := (<-r.seen).Deadline; !got.Equal(first) {
		t.Errorf("the plugin got deadline %v, want %v", got, first)
	}
	// Without SetDeadline, Do starts the clock itself; no Timeout means no deadline.
	q = req("p")
	q.Timeout = time.Hour
	if _, err := d.Do(context.Background(), q, nil); err != nil {
		t.Fatal(err)
	}
	if got := (<-r.seen).Deadline; got.Before(before.Add(time.Hour)) {
		t.Errorf("Do's deadline %v, want an hour from the call", got)
	}
	if _, err := d.Do(context.Background(), req("p"), nil); err != nil {
		t.Fatal(err)
	}
	if got := (<-r.seen).Deadline; !got.IsZero() {
		t.Errorf("no timeout: deadline %v, want none", got)
	}
}

// Limits are the bounds the dispatcher applies, defaults included, so another bound
// (the fleet session's flood bound) can be sized from them.
func TestLimits(t *testing.T) {
	if got, want := New(&recorder{}, Options{}).Limits(), (Limits{PerPlugin: max(4, runtime.NumCPU()), QueueSize: 1000}); got != want {
		t.Errorf("default limits %+v, want %+v", got, want)
	}
	if got, want := New(&recorder{}, Options{PerPlugin: 2, QueueSize: 7}).Limits(), (Limits{PerPlugin: 2, QueueSize: 7}); got != want {
		t.Errorf("limits %+v, want %+v", got, want)
	}
	// The limits are the ones enforced: PerPlugin commands run, QueueSize wait.
	r := &recorder{release: make(chan struct{})}
	d := New(r, Options{PerPlugin: 2, QueueSize: 1})
	l := d.Limits()
	errs := make(chan error, l.PerPlugin+l.QueueSize)
	for range l.PerPlugin + l.QueueSize {
		go func() {
			_, err := d.Do(context.Background(), req("p"), nil)
			errs <- err
		}()
	}
	waitFor(t, func() bool { return int(r.reached.Load()) == l.PerPlugin && len(d.queue) == l.QueueSize })
	if _, err := d.Do(context.Background(), req("p"), nil); !errors.Is(err, ErrQueueFull) {
		t.Errorf("past the limits: err = %v, want ErrQueueFull", err)
	}
	close(r.release)
	for range l.PerPlugin + l.QueueSize {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
