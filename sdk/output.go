package sdk

import (
	"fmt"
	"sync"
	"time"

	"github.com/yuzugo/yuzu/sdk/rows"
)

// Limits on what one command streams back. Rows go out in batches so a 100,000-row
// answer never becomes one giant message; a batch is sent when it holds MaxBatchRows
// rows or MaxBatchBytes bytes, or FlushInterval after its first row, so a slow
// handler's rows still reach the agent while it works.
const (
	MaxBatchRows  = 4096
	MaxBatchBytes = 1 << 20
	FlushInterval = 200 * time.Millisecond
	// MaxRowBytes bounds one row. A larger row is refused, never cut: the command
	// then ends with an error row and rc 1 so the answer does not look complete.
	MaxRowBytes = 4 << 20
)

// Output is where a handler writes its rows. It is safe for concurrent use.
type Output struct {
	mu       sync.Mutex
	send     func(batch []string) error
	batch    []string
	bytes    int
	timer    *time.Timer // armed while a partial batch waits
	err      error       // first send failure; later writes are dropped
	oversize int         // size of the first refused row
	closed   bool
}

func newOutput(send func([]string) error) *Output {
	return &Output{send: send}
}

// Row writes one row: kind, then fields, escaped by the SDK's rules (package rows).
func (o *Output) Row(kind string, fields ...string) {
	o.write(rows.Format(kind, fields...))
}

// Line writes a pre-formatted row as it is, apart from folding CR and LF into spaces.
// Use it for rows whose fields are already escaped or sanitized.
func (o *Output) Line(row string) {
	o.write(rows.Line(row))
}

// Error writes the row `error|<msg>`.
func (o *Output) Error(msg string) {
	o.write("error|" + rows.Line(msg))
}

// Fail writes `error|<msg>` and returns the failed result (rc 1).
func (o *Output) Fail(msg string) Result {
	o.Error(msg)
	return Failed()
}

// Failf is Fail with a format string.
func (o *Output) Failf(format string, args ...any) Result {
	return o.Fail(fmt.Sprintf(format, args...))
}

// Err returns the first error met sending rows to the agent (the agent went away or
// cancelled the command). A handler producing many rows may stop early when it is set.
func (o *Output) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

func (o *Output) write(row string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || o.err != nil {
		return
	}
	if len(row) > MaxRowBytes {
		if o.oversize == 0 {
			o.oversize = len(row)
		}
		return
	}
	o.batch = append(o.batch, row)
	o.bytes += len(row)
	if len(o.batch) >= MaxBatchRows || o.bytes >= MaxBatchBytes {
		o.flushLocked()
		return
	}
	if len(o.batch) == 1 {
		if o.timer == nil {
			o.timer = time.AfterFunc(FlushInterval, o.flushLater)
		} else {
			o.timer.Reset(FlushInterval)
		}
	}
}

// flushLater sends a partial batch that has waited FlushInterval.
func (o *Output) flushLater() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.closed {
		o.flushLocked()
	}
}

func (o *Output) flushLocked() {
	if len(o.batch) == 0 || o.err != nil {
		return
	}
	if o.timer != nil {
		o.timer.Stop()
	}
	o.err = o.send(o.batch)
	o.batch = make([]string, 0, len(o.batch))
	o.bytes = 0
}

// finish sends what is buffered and stops further writes. It adjusts res when a row
// was refused for its size.
func (o *Output) finish(res Result) (Result, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.oversize > 0 {
		o.batch = append(o.batch, fmt.Sprintf("error|row of %d bytes exceeds the %d-byte row limit and was not sent", o.oversize, MaxRowBytes))
		if res.Code == 0 {
			res.Code = 1
		}
	}
	o.flushLocked()
	o.closed = true
	return res, o.err
}
