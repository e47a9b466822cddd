package sdk

import (
	"strconv"
	"testing"
	"time"
)

// A handler that writes a row and then works for a long time must not hold the row
// back until it finishes: with nothing else in flight the row goes out at once (the
// agent would otherwise lose it if the plugin died a moment later).
func TestOutputFlushesPartialBatchWhileHandlerWorks(t *testing.T) {
	sent := make(chan []string, 4)
	o := newOutput(func(b []string) error { sent <- append([]string(nil), b...); return nil })
	o.Row("progress", "started")
	select {
	case b := <-sent:
		if len(b) != 1 || b[0] != "progress|started" {
			t.Fatalf("batch = %q", b)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("row not sent while the handler was still running")
	}
	if _, err := o.finish(Done()); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-sent:
		t.Fatalf("finish re-sent rows: %q", b)
	default:
	}
}

// Rows written while a send is in flight go out together in the next batch, in order,
// and a writer is held back once a whole batch waits unsent.
func TestOutputBatchesWhileASendIsInFlight(t *testing.T) {
	release := make(chan struct{})
	var batches [][]string
	first := true
	o := newOutput(func(b []string) error {
		if first {
			first = false
			<-release // the first send stalls, as a slow agent would
		}
		batches = append(batches, append([]string(nil), b...))
		return nil
	})
	o.Row("r", "0")
	wrote := make(chan struct{})
	go func() {
		for i := 1; i <= 2*MaxBatchRows+1; i++ {
			o.Row("r", strconv.Itoa(i))
		}
		close(wrote)
	}()
	select {
	case <-wrote:
		t.Fatal("the writer was not held back while a full batch waited")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	<-wrote
	if _, err := o.finish(Done()); err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, b := range batches {
		if len(b) > MaxBatchRows {
			t.Errorf("batch of %d rows, over the %d limit", len(b), MaxBatchRows)
		}
		all = append(all, b...)
	}
	if len(all) != 2*MaxBatchRows+2 || len(batches) < 3 {
		t.Fatalf("%d rows in %d batches, want %d rows in at least 3", len(all), len(batches), 2*MaxBatchRows+2)
	}
	for i, r := range all {
		if r != "r|"+strconv.Itoa(i) {
			t.Fatalf("row %d is %q: order lost", i, r)
		}
	}
}
