package sdk

import (
	"fmt"
	"sync"
	"time"

	"github.com/yuzugo/yuzu/sdk/rows"
)

// Limits on what one command streams back. Rows go out in batches so a 100,000-row
// answer never becomes one giant message: at most MaxBatchRows rows or MaxBatchBytes
// bytes per message.
//
// The flush rule: a row is sent at once when nothing else is being sent, and rows
// written while a send is in flight wait for it and go out together right after. A
// slow handler's rows therefore reach the agent immediately (even if the plugin dies a
// moment later), and a fast handler's rows batch themselves, up to the limits, without
// any timer.
const (
	MaxBatchRows  = 4096
	MaxBatchBytes = 1 << 20
	// MaxRowBytes bounds one row. A larger row is refused, never cut: the command
	// then ends with an error row and rc 1 so the answer does not look complete.
	MaxRowBytes = 4 << 20
)

// Output is where a handler writes its rows. It is safe for concurrent use. A writer
// waits while a full batch is still unsent, so a handler can never outrun the agent by
// more than one batch.
type Output struct {
	send func(batch []string) error
	// progress sends a Progress event; nil when the agent does not take them.
	progress func(done, total uint64, unit string) error

	progressMu   sync.Mutex
	progressLast time.Time

	mu       sync.Mutex
	cond     sync.Cond // the batch changed, a send ended, or the sender stopped
	batch    []string
	spare    []string // the last sent batch, reused once its send returned
	bytes    int
	sending  bool  // the sender goroutine is running
	inflight bool  // a batch taken from batch is being sent
	stopping bool  // finish has begun: no new sender, finish sends what is left
	err      error // first send failure; later writes are dropped
	oversize int   // size of the first refused row
	closed   bool
}

func newOutput(send func([]string) error) *Output {
	o := &Output{send: send}
	o.cond.L = &o.mu
	return o
}

// progressEvery is the least time between two progress reports of one command: a
// handler may call Progress for every file, the agent needs a few a second at most.
const progressEvery = 250 * time.Millisecond

// Progress reports how far the command has come: done units of total (0 when the total
// is unknown), unit naming what is counted ("files", "bytes"). The agent shows it while
// the command runs (on stderr for `yuzu-agent exec` when that is a terminal); it is
// never a row and never part of the answer. Call it as often as is convenient: reports
// closer together than a quarter of a second are dropped, except the one that reaches
// total. A report that goes out waits for the rows written before it to go first.
func (o *Output) Progress(done, total int64, unit string) {
	if o.progress == nil || done < 0 || total < 0 {
		return
	}
	o.progressMu.Lock()
	defer o.progressMu.Unlock()
	now := time.Now()
	final := total > 0 && done >= total
	if !final && !o.progressLast.IsZero() && now.Sub(o.progressLast) < progressEvery {
		return
	}
	o.progressLast = now
	// Rows written before the report go out before it: a reader that sees done=N has
	// the rows the handler wrote up to N (rows travel from the sender goroutine, the
	// report from this one, so without the wait a report could overtake them).
	o.mu.Lock()
	for !o.closed && o.err == nil && !o.stopping && (len(o.batch) > 0 || o.inflight) {
		o.cond.Wait()
	}
	stopped := o.closed || o.err != nil
	o.mu.Unlock()
	if stopped {
		return
	}
	// A failed report is the stream failing: the next row write meets the same error.
	_ = o.progress(uint64(done), uint64(total), rows.Printable(rows.ValidUTF8(unit)))
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

// Error writes the row `error|<msg>` and lets the command go on: for one item that
// could not be read in an answer that continues. To end the command failed, return
// Fail's result instead.
func (o *Output) Error(msg string) {
	o.write("error|" + rows.Line(msg))
}

// Fail writes `error|<msg>` and returns the failed result (rc 1): end a failed
// command with `return out.Fail(msg), nil`.
func (o *Output) Fail(msg string) Result {
	o.Error(msg)
	return failed
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
	row = rows.ValidUTF8(row)
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(row) > MaxRowBytes {
		if o.oversize == 0 && !o.closed {
			o.oversize = len(row)
		}
		return
	}
	for !o.closed && o.err == nil && !o.stopping && (len(o.batch) >= MaxBatchRows || o.bytes >= MaxBatchBytes) {
		o.cond.Wait()
	}
	if o.closed || o.err != nil {
		return
	}
	o.batch = append(o.batch, row)
	o.bytes += len(row)
	switch {
	case o.stopping:
		// finish sends it with whatever else is left.
	case !o.sending:
		o.sending = true
		go o.sendLoop()
	default:
		o.cond.Broadcast()
	}
}

// sendLoop sends batches until finish stops it or a send fails. It runs while a command
// writes rows; at most one runs per Output.
func (o *Output) sendLoop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for {
		for len(o.batch) == 0 && !o.stopping && o.err == nil {
			o.cond.Wait()
		}
		if len(o.batch) == 0 || o.err != nil || o.stopping {
			o.sending = false
			o.cond.Broadcast()
			return
		}
		b := o.batch
		o.batch, o.bytes = o.spare[:0], 0
		o.inflight = true
		o.cond.Broadcast() // writers held by a full batch may go on
		o.mu.Unlock()
		err := o.send(b)
		o.mu.Lock()
		o.inflight = false
		o.cond.Broadcast() // a progress report waiting for these rows may go
		if err != nil && o.err == nil {
			o.err = err
		}
		// gRPC has marshalled the batch when Send returns, so its slice can be reused;
		// clearing it lets the row strings go.
		clear(b)
		o.spare = b[:0]
	}
}

// finish sends what is buffered, in order, and stops further writes. It adjusts res
// when a row was refused for its size.
func (o *Output) finish(res Result) (Result, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stopping = true
	o.cond.Broadcast()
	for o.sending {
		o.cond.Wait()
	}
	if o.oversize > 0 {
		o.batch = append(o.batch, fmt.Sprintf("error|row of %d bytes exceeds the %d-byte row limit and was not sent", o.oversize, MaxRowBytes))
		if res.Code == 0 {
			res.Code = 1
		}
	}
	if len(o.batch) > 0 && o.err == nil {
		o.err = o.send(o.batch)
	}
	o.batch = nil
	o.closed = true
	o.cond.Broadcast()
	return res, o.err
}
