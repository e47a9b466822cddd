package sdk

import (
	"testing"
	"time"
)

// A handler that writes a row and then works for a long time must not hold the row
// back until it finishes.
func TestOutputFlushesPartialBatchWhileHandlerWorks(t *testing.T) {
	sent := make(chan []string, 4)
	o := newOutput(func(b []string) error { sent <- append([]string(nil), b...); return nil })
	o.Row("progress", "started")
	select {
	case b := <-sent:
		if len(b) != 1 || b[0] != "progress|started" {
			t.Fatalf("batch = %q", b)
		}
	case <-time.After(10 * FlushInterval):
		t.Fatalf("row not sent within %s while the handler was still running", 10*FlushInterval)
	}
	if _, err := o.finish(OK()); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-sent:
		t.Fatalf("finish re-sent rows: %q", b)
	default:
	}
}
