//go:build linux

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/sdktest"
)

// TestLookChild runs the look and identify actions through the real plugin binary,
// started the way the agent starts it. The binary is built once for all subtests.
func TestLookChild(t *testing.T) {
	bin := sdktest.Build(t, ".")
	t.Run("every action", func(t *testing.T) { lookChildActions(t, bin) })
	t.Run("find_by_hash cancelled", func(t *testing.T) { lookChildCancel(t, bin) })
	t.Run("find_by_hash max_results", func(t *testing.T) { lookChildMaxResults(t, bin) })
	t.Run("memory", func(t *testing.T) { lookChildMemory(t, bin) })
}

// lookChildActions: each of the nine actions answers in the child exactly as in
// process.
func lookChildActions(t *testing.T, bin string) {
	child := sdktest.Start(t, bin, sdk.Config{DataDir: t.TempDir()})
	inproc := lookHarness(t)
	d := lookDir(t)
	lookHashTree(t, d+"/tree")
	lookWrite(t, d+"/text", "one\r\ntwo\nthree")
	lookWrite(t, d+"/outside", "TOPSECRET")
	lookSymlink(t, d+"/outside", d+"/tree/escape")
	target := lookSHA("target")
	for _, c := range []struct {
		action string
		params map[string]string
		want   string // a row the answer must contain
	}{
		{"exists", kv("path", d+"/text"), "size|14"},
		{"exists", kv("path", d+"/tree/escape", "base_dir", d+"/tree"), "error|path is outside allowed base directory"},
		{"list_dir", kv("path", d+"/tree"), "entry|sub|directory|0"},
		{"file_hash", kv("path", d+"/tree/a.txt"), "hash|" + target},
		{"read", kv("path", d+"/text", "offset", "2"), "line|2|two"},
		{"read", kv("path", d+"/tree/escape", "base_dir", d+"/tree"), "error|path is not accessible or outside allowed base directory"},
		{"get_acl", kv("path", d+"/text"), "acl|none|-"},
		{"get_signature", kv("path", d+"/text"), "error|code signature verification is not supported on this platform"},
		{"get_version_info", kv("path", d+"/text"), "error|version info extraction is not supported on this platform"},
		{"search_dir", kv("root", d, "pattern", "deep*"), "result|" + d + "/tree/sub/deep|directory"},
		{"find_by_hash", kv("directory", d+"/tree", "sha256", target), "match|" + d + "/tree/sub/b.txt|6"},
	} {
		got := child.Run(c.action, c.params).String()
		if want := inproc.Run(c.action, c.params).String(); got != want {
			t.Errorf("%s %v: child answered\n%s\nin process\n%s", c.action, c.params, got, want)
		}
		if !strings.Contains(got, c.want+"\n") {
			t.Errorf("%s %v: no row %q in\n%s", c.action, c.params, c.want, got)
		}
		if strings.Contains(got, "TOPSECRET") {
			t.Errorf("%s leaked:\n%s", c.action, got)
		}
	}
}

// lookChildCancel: a command cancelled (here by its deadline) in the middle of
// hashing a large file stops with reason cancelled and CONSTRAINED, at once.
func lookChildCancel(t *testing.T, bin string) {
	h := sdktest.Start(t, bin, sdk.Config{DataDir: t.TempDir()})
	d := lookDir(t)
	lookSparse(t, d+"/big", "", 3<<30)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	o, err := h.RunContext(ctx, "find_by_hash", kv("directory", d, "sha256", lookSHA("x")))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
	got := o.String()
	if !strings.Contains(got, "truncated|cancelled|visited=1|") || !strings.HasSuffix(got, "matches_found|0\n"+lookConstrained("cancelled")) {
		t.Fatalf("got:\n%s", got)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("the cancelled walk took %v", el)
	}
}

// lookChildMaxResults: the real bound of 100 matches, with entries left over.
func lookChildMaxResults(t *testing.T, bin string) {
	h := sdktest.Start(t, bin, sdk.Config{DataDir: t.TempDir()})
	d := lookDir(t)
	for i := range 130 {
		lookWrite(t, fmt.Sprintf("%s/f%03d", d, i), "same")
	}
	o := h.Run("find_by_hash", kv("directory", d, "sha256", lookSHA("same")))
	got := o.String()
	if strings.Count(got, "match|") != 100 || !strings.Contains(got, "truncated|max_results|") ||
		!strings.HasSuffix(got, "matches_found|100\n"+lookConstrained("max_results")) {
		t.Fatalf("got:\n%.3000s", got)
	}
}

// lookChildMemory reads the default page of a 100 MiB file, hashes a 1 GiB file and
// hashes a large tree in one child, then reads the child's peak resident set
// (VmHWM), which must stay under 64 MiB.
func lookChildMemory(t *testing.T, bin string) {
	h := sdktest.Start(t, bin, sdk.Config{DataDir: t.TempDir()})
	pid := h.Client.ReattachConfig().Pid
	d := lookDir(t)
	before := lookPeakRSS(t, pid)

	// A 100 MiB text file of real lines.
	text := d + "/text"
	f, err := os.Create(text)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	lines := 0
	for n := 0; n < maxTextFile-100; lines++ {
		k, _ := fmt.Fprintf(w, "%09d the quick brown fox jumps over the lazy dog, line of the memory test\n", lines)
		n += k
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	o := h.Run("read", kv("path", text))
	if len(o.Rows) != 102 || o.Rows[100] != "total_lines|"+strconv.Itoa(lines) || o.Result.Code != 0 {
		t.Fatalf("read: %d rows, last %q", len(o.Rows), o.Rows[len(o.Rows)-2:])
	}

	lookSparse(t, d+"/gig", "x", 1<<30)
	if o := h.Run("file_hash", kv("path", d+"/gig")); o.Result.Code != 0 {
		t.Fatalf("file_hash: %v", o)
	}

	// A tree of 10,000 small files in 100 directories and 24 sparse 64 MiB files.
	tree := d + "/tree"
	for i := range 100 {
		sub := fmt.Sprintf("%s/d%02d", tree, i)
		lookMkdir(t, sub)
		for j := range 100 {
			if err := os.WriteFile(fmt.Sprintf("%s/f%03d", sub, j), []byte(sub), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 24 {
		lookSparse(t, fmt.Sprintf("%s/big%02d", tree, i), "", 64<<20)
	}
	start := time.Now()
	o = h.Run("find_by_hash", kv("directory", tree, "sha256", lookSHA(tree+"/d42")))
	took := time.Since(start)
	if got := o.String(); !strings.Contains(got, "match|"+tree+"/d42/f000|") || !strings.HasSuffix(got, "matches_found|100\n"+lookConstrained("max_results")) &&
		!strings.HasSuffix(got, "matches_found|100\n"+lookOK) {
		t.Fatalf("find_by_hash:\n%.2000s", got)
	}

	o = h.Run("search_dir", kv("root", tree, "pattern", "f0[0-9]*", "match_type", "files", "max_results", "1000"))
	if o.Rows[len(o.Rows)-1] != "total_matches|1000" {
		t.Fatalf("search_dir: %q", o.Rows[len(o.Rows)-1])
	}

	peak := lookPeakRSS(t, pid)
	t.Logf("child peak RSS: %.1f MiB at start, %.1f MiB after reading a page of a %d MiB file, hashing 1 GiB "+
		"and walking a tree of 10,124 files (find_by_hash took %v)",
		float64(before)/(1<<20), float64(peak)/(1<<20), maxTextFile>>20, took.Round(time.Millisecond))
	if peak >= 64<<20 {
		t.Fatalf("peak RSS %d bytes, over 64 MiB", peak)
	}
}

// lookPeakRSS returns VmHWM of process pid in bytes.
func lookPeakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/<pid>/status")
	return 0
}
