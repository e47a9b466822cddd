package main

import (
	"strings"
	"testing"
)

func TestReport(t *testing.T) {
	cases := []struct {
		name       string
		stream     string
		wantFailed bool
		wantLine   string
		wantOut    []string // substrings the printed report must contain
	}{
		{
			name: "all pass with a subtest and an empty package",
			stream: `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"run","Package":"p","Test":"TestA/one"}
{"Action":"pass","Package":"p","Test":"TestA/one"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Elapsed":0.5}
{"Action":"skip","Package":"q"}
`,
			wantLine: "PASS x: 1 passed, 0 failed, 0 skipped (+1 subtests) in 1 packages",
			wantOut:  []string{"ok   p\t0.50s", "?    q\t[no test files]"},
		},
		{
			name: "a failing subtest prints its output with the parent",
			stream: `{"Action":"output","Package":"p","Test":"TestA/one","Output":"    a_test.go:9: got 1, want 2\n"}
{"Action":"fail","Package":"p","Test":"TestA/one"}
{"Action":"fail","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Output":"FAIL\n"}
{"Action":"fail","Package":"p","Elapsed":1}
`,
			wantFailed: true,
			wantLine:   "FAIL x: 0 passed, 1 failed, 0 skipped (+1 subtests) in 1 packages, 1 packages failed",
			wantOut:    []string{"--- FAIL p TestA", "got 1, want 2", "FAIL p\t1.00s"},
		},
		{
			name: "a skip is listed with its reason",
			stream: `{"Action":"output","Package":"p","Test":"TestB","Output":"=== RUN   TestB\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:3: needs nftables\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"--- SKIP: TestB (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestB"}
{"Action":"pass","Package":"p"}
`,
			wantLine: "PASS x: 0 passed, 0 failed, 1 skipped (+0 subtests) in 1 packages",
			wantOut:  []string{"SKIP p TestB: b_test.go:3: needs nftables"},
		},
		{
			name: "a build failure and plain text lines",
			stream: `go: bad flag
{"ImportPath":"p [p.test]","Action":"build-output","Output":"p/a.go:1: syntax error\n"}
{"ImportPath":"p [p.test]","Action":"build-fail"}
{"Action":"fail","Package":"p","FailedBuild":"p [p.test]"}
`,
			wantFailed: true,
			wantLine:   "FAIL x: 0 passed, 0 failed, 0 skipped (+0 subtests) in 1 packages, 1 packages failed, 1 build failures",
			wantOut:    []string{"go: bad flag", "p/a.go:1: syntax error", "FAIL p [build failed: p [p.test]]"},
		},
		{
			name: "a test cut off by a crash counts as a failure",
			stream: `{"Action":"output","Package":"p","Test":"TestC","Output":"=== RUN   TestC\n"}
`,
			wantFailed: true,
			wantLine:   "FAIL x: 0 passed, 1 failed (1 unfinished), 0 skipped (+0 subtests) in 0 packages",
			wantOut:    []string{"--- UNFINISHED p TestC"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			r := &report{out: &out, outputs: map[string][]string{}}
			if err := r.read(strings.NewReader(c.stream)); err != nil {
				t.Fatal(err)
			}
			line := r.finish("x")
			if line != c.wantLine {
				t.Errorf("summary:\n got %q\nwant %q", line, c.wantLine)
			}
			if r.failed() != c.wantFailed {
				t.Errorf("failed() = %v, want %v", r.failed(), c.wantFailed)
			}
			for _, w := range c.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}
