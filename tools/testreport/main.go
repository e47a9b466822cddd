// Command testreport turns the event stream of `go test -json` into a short report:
// one line per package, the full output of every failing test, every skipped test with
// the reason it gave, and exact counts. `make test` pipes each module's tests through it
// so a skipped test is never silent and the final summary can say how many tests ran.
//
// Usage:
//
//	go test -json ./... | testreport -label sdk -summary FILE
//
// It exits 1 when any test or package failed or a package did not build, 0 otherwise.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of `go test -json` output (cmd/test2json's TestEvent).
type event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string
	FailedBuild string
}

// counts holds the totals the summary line reports.
type counts struct {
	passed, failed, skipped int // top-level tests
	subtests                int // subtests that ran, whatever their outcome
	packages, failedPkgs    int
	buildFailures           int
}

// report accumulates the state of one `go test -json` stream.
type report struct {
	out     io.Writer
	outputs map[string][]string // buffered output per "package\x00test"
	skips   []string            // "pkg TestName: reason", in the order they happened
	counts  counts
}

func main() {
	label := flag.String("label", "tests", "name of this run in the summary line")
	summary := flag.String("summary", "", "append the one-line summary to this file")
	flag.Parse()

	r := &report{out: os.Stdout, outputs: map[string][]string{}}
	if err := r.read(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	line := r.finish(*label)
	if *summary != "" {
		if err := appendLine(*summary, line); err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
	}
	if r.failed() {
		os.Exit(1)
	}
}

// read consumes the whole stream. A line that is not a JSON event (go itself can print
// plain errors, e.g. a bad flag) is passed through unchanged rather than dropped.
func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		raw := sc.Bytes()
		var ev event
		if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &ev) != nil {
			fmt.Fprintln(r.out, string(raw))
			continue
		}
		r.handle(ev)
	}
	return sc.Err()
}

func (r *report) handle(ev event) {
	key := ev.Package + "\x00" + ev.Test
	switch ev.Action {
	case "build-output":
		fmt.Fprint(r.out, ev.Output)
	case "build-fail":
		r.counts.buildFailures++
	case "output":
		r.outputs[key] = append(r.outputs[key], ev.Output)
	case "pass", "fail", "skip":
		if ev.Test == "" {
			r.endPackage(ev, key)
		} else {
			r.endTest(ev, key)
		}
		delete(r.outputs, key)
	}
}

func (r *report) endTest(ev event, key string) {
	if strings.Contains(ev.Test, "/") {
		r.counts.subtests++
		// A failing subtest's output is printed with its parent, which fails too;
		// a skipped subtest is still worth naming.
		if ev.Action == "fail" {
			r.outputs[ev.Package+"\x00"+parent(ev.Test)] = append(
				r.outputs[ev.Package+"\x00"+parent(ev.Test)], r.outputs[key]...)
		}
		if ev.Action == "skip" {
			r.skips = append(r.skips, fmt.Sprintf("%s %s: %s", ev.Package, ev.Test, reason(r.outputs[key])))
		}
		return
	}
	switch ev.Action {
	case "pass":
		r.counts.passed++
	case "fail":
		r.counts.failed++
		fmt.Fprintf(r.out, "--- FAIL %s %s\n", ev.Package, ev.Test)
		for _, l := range r.outputs[key] {
			fmt.Fprint(r.out, l)
		}
	case "skip":
		r.counts.skipped++
		r.skips = append(r.skips, fmt.Sprintf("%s %s: %s", ev.Package, ev.Test, reason(r.outputs[key])))
	}
}

func (r *report) endPackage(ev event, key string) {
	switch ev.Action {
	case "pass":
		r.counts.packages++
		fmt.Fprintf(r.out, "ok   %s\t%.2fs\n", ev.Package, ev.Elapsed)
	case "skip":
		fmt.Fprintf(r.out, "?    %s\t[no test files]\n", ev.Package)
	case "fail":
		r.counts.packages++
		r.counts.failedPkgs++
		// Package-level output holds what happened outside any test: a panic, a
		// timeout, a TestMain failure, a build error.
		for _, l := range r.outputs[key] {
			fmt.Fprint(r.out, l)
		}
		if ev.FailedBuild != "" {
			fmt.Fprintf(r.out, "FAIL %s [build failed: %s]\n", ev.Package, ev.FailedBuild)
		} else {
			fmt.Fprintf(r.out, "FAIL %s\t%.2fs\n", ev.Package, ev.Elapsed)
		}
	}
}

func (r *report) failed() bool {
	return r.counts.failed > 0 || r.counts.failedPkgs > 0 || r.counts.buildFailures > 0
}

// finish prints the skipped tests and the counts, and returns the one-line summary.
func (r *report) finish(label string) string {
	// Output left over belongs to tests that never ended: the stream was cut short.
	var unfinished []string
	for key := range r.outputs {
		if pkg, test, _ := strings.Cut(key, "\x00"); test != "" {
			unfinished = append(unfinished, pkg+" "+test)
		}
	}
	sort.Strings(unfinished)
	for _, u := range unfinished {
		fmt.Fprintf(r.out, "--- UNFINISHED %s\n", u)
	}
	if len(r.skips) > 0 {
		fmt.Fprintf(r.out, "skipped tests (%d):\n", len(r.skips))
		for _, s := range r.skips {
			fmt.Fprintf(r.out, "  SKIP %s\n", s)
		}
	}
	c := r.counts
	verdict := "PASS"
	if r.failed() || len(unfinished) > 0 {
		verdict = "FAIL"
	}
	// A test the binary's crash cut off failed: it is counted so, and named above.
	cut := ""
	if len(unfinished) > 0 {
		cut = fmt.Sprintf(" (%d unfinished)", len(unfinished))
	}
	line := fmt.Sprintf("%s %s: %d passed, %d failed%s, %d skipped (+%d subtests) in %d packages",
		verdict, label, c.passed, c.failed+len(unfinished), cut, c.skipped, c.subtests, c.packages)
	if c.failedPkgs > 0 {
		line += fmt.Sprintf(", %d packages failed", c.failedPkgs)
	}
	if c.buildFailures > 0 {
		line += fmt.Sprintf(", %d build failures", c.buildFailures)
	}
	fmt.Fprintln(r.out, line)
	if len(unfinished) > 0 {
		r.counts.failedPkgs++
	}
	return line
}

// reason picks the message a skipped test logged, leaving out the === and --- lines
// the test runner adds around it.
func reason(lines []string) string {
	var msg []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") {
			continue
		}
		msg = append(msg, t)
	}
	if len(msg) == 0 {
		return "(no reason given)"
	}
	return strings.Join(msg, " / ")
}

func parent(test string) string {
	i := strings.LastIndex(test, "/")
	return test[:i]
}

func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
