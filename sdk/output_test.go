package sdk

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder collects the batches an Output sends.
type recorder struct {
	mu      sync.Mutex
	batches [][]string
	failAt  int // fail the failAt-th send (1-based); 0 never
}

func (r *recorder) send(batch []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failAt > 0 && len(r.batches)+1 == r.failAt {
		return errors.New("agent went away")
	}
	r.batches = append(r.batches, append([]string(nil), batch...))
	return nil
}

func (r *recorder) rows() []string {
	var all []string
	for _, b := range r.batches {
		all = append(all, b...)
	}
	return all
}

// checkBatchBounds checks each batch against the limits: at most MaxBatchRows rows,
// and the rows before the last stay under MaxBatchBytes (the last row is the one that
// crossed the limit and triggered the send).
func checkBatchBounds(t *testing.T, batches [][]string) {
	t.Helper()
	for i, b := range batches {
		if len(b) == 0 {
			t.Errorf("batch %d is empty", i)
		}
		if len(b) > MaxBatchRows {
			t.Errorf("batch %d holds %d rows, limit %d", i, len(b), MaxBatchRows)
		}
		n := 0
		for _, r := range b[:max(len(b)-1, 0)] {
			n += len(r)
		}
		if n >= MaxBatchBytes {
			t.Errorf("batch %d holds %d bytes before its last row, limit %d", i, n, MaxBatchBytes)
		}
	}
}

func TestOutputBatchesBoundedAndOrdered(t *testing.T) {
	cases := []struct {
		name    string
		rows    int
		rowSize int
	}{
		{"many small rows", 3*MaxBatchRows + 17, 10},
		{"large rows", 40, 100 << 10},
		{"rows near the byte limit", 5, MaxBatchBytes - 1},
		{"single row", 1, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r recorder
			o := newOutput(r.send)
			var want []string
			for i := range c.rows {
				s := strconv.Itoa(i)
				row := "r|" + s + strings.Repeat("x", max(c.rowSize-len(s), 0))
				want = append(want, row)
				o.Line(row)
			}
			res, err := o.finish(Done())
			if err != nil || res.Code != 0 {
				t.Fatalf("finish: %+v, %v", res, err)
			}
			checkBatchBounds(t, r.batches)
			got := r.rows()
			if len(got) != len(want) {
				t.Fatalf("sent %d rows, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("row %d out of order or changed", i)
				}
			}
		})
	}
}

func TestOutputEscapes(t *testing.T) {
	var r recorder
	o := newOutput(r.send)
	o.Row("entry", "a|b", "c\nd")
	o.Line("pre|formatted\r\nrow")
	o.Error("bad\nthing|here")
	res := o.Failf("failed %d|%s", 3, "x")
	if res.Code != 1 {
		t.Errorf("Failf code %d", res.Code)
	}
	if _, err := o.finish(res); err != nil {
		t.Fatal(err)
	}
	want := []string{`entry|a\|b|c d`, "pre|formatted  row", "error|bad thing|here", "error|failed 3|x"}
	if got := r.rows(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows %q, want %q", got, want)
	}
}

func TestOutputOversizeRowRefused(t *testing.T) {
	cases := []struct {
		name     string
		in       Result
		wantCode int
	}{
		{"success becomes failure", Done(), 1},
		{"failure code kept", Result{Code: 3}, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r recorder
			o := newOutput(r.send)
			o.Row("before")
			huge := strings.Repeat("y", MaxRowBytes+1)
			o.Line(huge)
			o.Line(huge + "more") // only the first refused row is reported
			o.Row("after")
			res, err := o.finish(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if res.Code != c.wantCode {
				t.Errorf("code %d, want %d", res.Code, c.wantCode)
			}
			want := []string{"before", "after",
				fmt.Sprintf("error|row of %d bytes exceeds the %d-byte row limit and was not sent", MaxRowBytes+1, MaxRowBytes)}
			if got := r.rows(); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("rows %q, want %q", got, want)
			}
		})
	}
	// A row of exactly MaxRowBytes is allowed.
	var r recorder
	o := newOutput(r.send)
	o.Line(strings.Repeat("z", MaxRowBytes))
	if res, err := o.finish(Done()); err != nil || res.Code != 0 || len(r.rows()) != 1 {
		t.Errorf("row at the limit: %+v, %v, %d rows", res, err, len(r.rows()))
	}
}

func TestOutputSendFailureStopsWrites(t *testing.T) {
	r := recorder{failAt: 2}
	o := newOutput(r.send)
	for i := range 3 * MaxBatchRows {
		o.Row("n", strconv.Itoa(i))
	}
	if _, err := o.finish(Done()); err == nil {
		t.Error("finish returned no error after a failed send")
	}
	if o.Err() == nil {
		t.Error("Err() is nil after a failed send")
	}
	// Only the first batch arrived; nothing was sent after the failure.
	if len(r.batches) != 1 {
		t.Fatalf("sent %d batches; want only the first", len(r.batches))
	}
	for i, row := range r.batches[0] {
		if row != "n|"+strconv.Itoa(i) {
			t.Fatalf("row %d is %q", i, row)
		}
	}
}

func TestOutputWritesAfterFinishDropped(t *testing.T) {
	var r recorder
	o := newOutput(r.send)
	o.Row("one")
	if _, err := o.finish(Done()); err != nil {
		t.Fatal(err)
	}
	o.Row("late")
	if got := r.rows(); len(got) != 1 || got[0] != "one" {
		t.Errorf("rows %q; a write after finish must be dropped", got)
	}
}

func TestOutputConcurrentWriters(t *testing.T) {
	var r recorder
	o := newOutput(r.send)
	const writers, each = 8, 2000
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				o.Row("w", strconv.Itoa(w), strconv.Itoa(i))
			}
		}()
	}
	wg.Wait()
	if _, err := o.finish(Done()); err != nil {
		t.Fatal(err)
	}
	checkBatchBounds(t, r.batches)
	// Each writer's rows keep their own order.
	next := make([]int, writers)
	for _, row := range r.rows() {
		f := strings.Split(row, "|")
		w, _ := strconv.Atoi(f[1])
		i, _ := strconv.Atoi(f[2])
		if i != next[w] {
			t.Fatalf("writer %d: row %d after %d", w, i, next[w]-1)
		}
		next[w]++
	}
	for w, n := range next {
		if n != each {
			t.Errorf("writer %d: %d rows arrived, want %d", w, n, each)
		}
	}
}

// A progress report goes out after the rows written before it, even when sending a
// batch is slow: a reader that sees done=N has the rows up to N. Before, the report
// went straight from the handler's goroutine and could overtake the batch still with
// the sender (sdktest.KillMidCommand then killed a child that had sent no row).
func TestProgressAfterEarlierRows(t *testing.T) {
	var mu sync.Mutex
	var events []string
	o := newOutput(func(batch []string) error {
		time.Sleep(20 * time.Millisecond) // a slow agent
		mu.Lock()
		defer mu.Unlock()
		events = append(events, batch...)
		return nil
	})
	o.progress = func(done, total uint64, unit string) error {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, fmt.Sprintf("progress %d/%d", done, total))
		return nil
	}
	for i := 1; i <= 3; i++ {
		o.Row("number", strconv.Itoa(i))
		o.Progress(int64(i), 3, "numbers")
	}
	if _, err := o.finish(Complete()); err != nil {
		t.Fatal(err)
	}
	// Reports closer than progressEvery are dropped, except the last (done = total).
	want := []string{"number|1", "progress 1/3", "number|2", "number|3", "progress 3/3"}
	if strings.Join(events, ",") != strings.Join(want, ",") {
		t.Errorf("events %q, want %q", events, want)
	}
}
