package hashwalk

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/mounts"
	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
)

func hexSHA(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

var emptySHA = hexSHA(nil)

func writeFile(t testing.TB, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t testing.TB, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t testing.TB, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// canonTemp returns a canonical temporary directory (the walk expects a
// resolved root).
func canonTemp(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func request(root, target string) Request {
	return Request{Root: root, SHA256: target, MaxDepth: 10, Mounts: mounts.NewTable(nil), Bounds: DefaultBounds()}
}

// bothOpenModes runs f with openat2 (when the kernel has it) and with the
// openat fallback.
func bothOpenModes(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	for _, fallback := range []bool{false, true} {
		name := "openat2"
		if fallback {
			name = "openat"
		} else if !pathcheck.Openat2Available() {
			t.Log("kernel has no usable openat2; only the fallback runs")
			continue
		}
		t.Run(name, func(t *testing.T) {
			pathcheck.ForceFallback(fallback)
			defer pathcheck.ForceFallback(false)
			f(t)
		})
	}
}

func mustWalk(t testing.TB, ctx context.Context, req Request) Result {
	t.Helper()
	type out struct {
		r   Result
		err error
	}
	ch := make(chan out, 1)
	go func() {
		r, err := Walk(ctx, req)
		ch <- out{r, err}
	}()
	// A walk that blocks on a FIFO or a device would hang here; fail with a
	// clear message well before the test binary's own timeout.
	select {
	case o := <-ch:
		if o.err != nil {
			t.Fatalf("Walk: %v", o.err)
		}
		return o.r
	case <-time.After(60 * time.Second):
		t.Fatal("Walk did not return within 60s")
	}
	return Result{}
}

func matchPaths(r Result) []string {
	var out []string
	for _, m := range r.Matches {
		out = append(out, m.Path)
	}
	return out
}

func TestWalkFindsMatchesSorted(t *testing.T) {
	bothOpenModes(t, func(t *testing.T) {
		root := canonTemp(t)
		target := []byte("needle\n")
		writeFile(t, filepath.Join(root, "z.txt"), target)
		writeFile(t, filepath.Join(root, "a", "b", "hit"), target)
		writeFile(t, filepath.Join(root, "a", "other"), []byte("hay"))
		writeFile(t, filepath.Join(root, "m", "needle copy"), target)
		writeFile(t, filepath.Join(root, "m", "weird|name\nx"), target)

		r := mustWalk(t, context.Background(), request(root, strings.ToUpper(hexSHA(target))))
		want := []string{
			root + "/a/b/hit",
			root + "/m/needle copy",
			root + "/m/weird|name\nx",
			root + "/z.txt",
		}
		if got := matchPaths(r); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("matches %q, want %q", got, want)
		}
		for _, m := range r.Matches {
			if m.Size != int64(len(target)) {
				t.Errorf("%s size %d", m.Path, m.Size)
			}
		}
		// Entries: z.txt a a/b a/b/hit a/other m m/2 files = 8.
		wantC := Counters{Visited: 8, Hashed: int64(4*len(target) + 3)}
		if r.Counters != wantC || r.Reason != ReasonNone || r.GuardUnavailable {
			t.Fatalf("got %+v reason %s guard %v, want %+v", r.Counters, r.Reason, r.GuardUnavailable, wantC)
		}
		if got := rowText(Rows(r)); !strings.HasSuffix(got, "\nmatches_found|4") || strings.Contains(got, "truncated") {
			t.Fatalf("rows %q", got)
		}
		if StatusOf(r).Constrained {
			t.Fatal("a clean walk is constrained")
		}
	})
}

func TestWalkEmptyFilesMatchEmptyHash(t *testing.T) {
	root := canonTemp(t)
	writeFile(t, filepath.Join(root, "e1"), nil)
	writeFile(t, filepath.Join(root, "d", "e2"), nil)
	writeFile(t, filepath.Join(root, "d", "full"), []byte("x"))
	r := mustWalk(t, context.Background(), request(root, emptySHA))
	if got := matchPaths(r); len(got) != 2 || got[0] != root+"/d/e2" || got[1] != root+"/e1" {
		t.Fatalf("matches %q", got)
	}
	if r.Matches[0].Size != 0 || r.Hashed != 1 || r.Visited != 4 {
		t.Fatalf("result %+v", r)
	}
}

func TestWalkBadTargetMatchesNothing(t *testing.T) {
	root := canonTemp(t)
	writeFile(t, filepath.Join(root, "e"), nil)
	for _, target := range []string{"", "zz", emptySHA[:62], emptySHA + "00"} {
		r := mustWalk(t, context.Background(), request(root, target))
		if len(r.Matches) != 0 || r.Hashed != 0 || r.Visited != 1 {
			t.Fatalf("target %q: %+v", target, r)
		}
	}
}

func TestWalkSymlinksNeverFollowed(t *testing.T) {
	bothOpenModes(t, func(t *testing.T) {
		outside := canonTemp(t)
		root := canonTemp(t)
		target := []byte("secret outside")
		writeFile(t, filepath.Join(outside, "s"), target)
		writeFile(t, filepath.Join(outside, "dir", "s"), target)
		writeFile(t, filepath.Join(root, "in", "plain"), []byte("plain"))
		symlink(t, filepath.Join(outside, "s"), filepath.Join(root, "file-out"))
		symlink(t, filepath.Join(outside, "dir"), filepath.Join(root, "dir-out"))
		symlink(t, "in/plain", filepath.Join(root, "file-in"))
		symlink(t, "in", filepath.Join(root, "dir-in"))
		symlink(t, "missing", filepath.Join(root, "in", "dangling"))
		symlink(t, ".", filepath.Join(root, "in", "loop"))

		r := mustWalk(t, context.Background(), request(root, hexSHA(target)))
		if len(r.Matches) != 0 {
			t.Fatalf("followed a link: %v", r.Matches)
		}
		want := Counters{Visited: 8, Hashed: 5, SkippedSymlink: 6}
		if r.Counters != want || r.Reason != ReasonNone {
			t.Fatalf("got %+v %s, want %+v", r.Counters, r.Reason, want)
		}
		if StatusOf(r).Constrained {
			t.Fatal("symlinks alone constrained the result")
		}
		if rows := rowText(Rows(r)); !strings.Contains(rows, "truncated|none|visited=8|hashed=5|skipped_unreadable=0|skipped_symlink=6|") {
			t.Fatalf("rows %q", rows)
		}
	})
}

func TestWalkSpecialFilesNeverOpened(t *testing.T) {
	root := canonTemp(t)
	if err := unix.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(root, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	wantNotRegular := int64(2)
	if err := unix.Mknod(filepath.Join(root, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err == nil {
		wantNotRegular++
	} else {
		t.Logf("no character device in this test (mknod: %v)", err)
	}
	writeFile(t, filepath.Join(root, "f"), []byte("f"))
	r := mustWalk(t, context.Background(), request(root, emptySHA))
	want := Counters{Visited: wantNotRegular + 1, Hashed: 1, SkippedNotRegular: wantNotRegular}
	if r.Counters != want {
		t.Fatalf("got %+v, want %+v", r.Counters, want)
	}
	if StatusOf(r).Constrained {
		t.Fatal("special files alone constrained the result")
	}
}

// TestWalkLastMomentSwaps replaces a listed regular file just before the
// walk opens it.
func TestWalkLastMomentSwaps(t *testing.T) {
	bothOpenModes(t, func(t *testing.T) {
		outside := canonTemp(t)
		root := canonTemp(t)
		target := []byte("target")
		writeFile(t, filepath.Join(outside, "t"), target)
		for _, n := range []string{"to-fifo", "to-link", "to-dir", "to-socket", "gone"} {
			writeFile(t, filepath.Join(root, n), []byte("x"))
		}
		var l net.Listener
		setHook(&beforeOpenFile, func(p string) {
			switch filepath.Base(p) {
			case "to-fifo":
				os.Remove(p)
				unix.Mkfifo(p, 0o644)
			case "to-link":
				os.Remove(p)
				os.Symlink(filepath.Join(outside, "t"), p)
			case "to-dir":
				os.Remove(p)
				os.Mkdir(p, 0o755)
			case "to-socket":
				os.Remove(p)
				l, _ = net.Listen("unix", p)
			case "gone":
				os.Remove(p)
			}
		})
		defer beforeOpenFile.Store(nil)
		r := mustWalk(t, context.Background(), request(root, hexSHA(target)))
		if l != nil {
			l.Close()
		}
		if len(r.Matches) != 0 {
			t.Fatalf("matched through a swap: %v", r.Matches)
		}
		want := Counters{Visited: 5, SkippedSymlink: 1, SkippedNotRegular: 3, SkippedUnreadable: 1}
		if r.Counters != want {
			t.Fatalf("got %+v, want %+v", r.Counters, want)
		}
	})
}

// TestWalkDirectorySwappedForSymlink swaps a directory for a link to a tree
// outside the root, once before the walk opens it and once after it is open
// (while one of its files is about to be opened).
func TestWalkDirectorySwappedForSymlink(t *testing.T) {
	bothOpenModes(t, func(t *testing.T) {
		outside := canonTemp(t)
		root := canonTemp(t)
		target := []byte("outside secret")
		writeFile(t, filepath.Join(outside, "f"), target)
		writeFile(t, filepath.Join(outside, "sub", "f"), target)
		writeFile(t, filepath.Join(root, "early", "f"), []byte("inside 1"))
		writeFile(t, filepath.Join(root, "late", "f"), []byte("inside 2"))
		writeFile(t, filepath.Join(root, "late", "sub", "f"), []byte("inside 3"))

		swap := func(dir string) {
			if err := os.Rename(dir, dir+".moved"); err != nil {
				t.Error(err)
				return
			}
			if err := os.Symlink(outside, dir); err != nil {
				t.Error(err)
			}
		}
		setHook(&beforeOpenDir, func(p string) {
			if p == root+"/early" {
				swap(p)
			}
		})
		var lateSwapped atomic.Bool
		setHook(&beforeOpenFile, func(p string) {
			if strings.HasPrefix(p, root+"/late/") && lateSwapped.CompareAndSwap(false, true) {
				swap(root + "/late")
			}
		})
		defer func() { beforeOpenDir.Store(nil); beforeOpenFile.Store(nil) }()

		r := mustWalk(t, context.Background(), request(root, hexSHA(target)))
		if len(r.Matches) != 0 {
			t.Fatalf("escaped the root: %v", r.Matches)
		}
		if !lateSwapped.Load() {
			t.Fatal("the late swap never happened")
		}
		// early: counted as a link at open time. late: already open, so
		// its entries are still read from the original directory.
		if r.SkippedSymlink != 1 || r.SkippedUnreadable != 0 {
			t.Fatalf("counters %+v", r.Counters)
		}
		if r.Visited != 5 || r.Hashed != int64(len("inside 2")+len("inside 3")) {
			t.Fatalf("counters %+v", r.Counters)
		}
	})
}

func TestWalkMaxDepth(t *testing.T) {
	root := canonTemp(t)
	target := []byte("t")
	// Depth 1: f1, d1. Depth 2: d1/f2, d1/d2. Depth 3: d1/d2/f3, d1/d2/d3.
	// Depth 4: d1/d2/d3/f4.
	writeFile(t, filepath.Join(root, "f1"), target)
	writeFile(t, filepath.Join(root, "d1", "f2"), target)
	writeFile(t, filepath.Join(root, "d1", "d2", "f3"), target)
	writeFile(t, filepath.Join(root, "d1", "d2", "d3", "f4"), target)
	tests := []struct {
		depth   int
		visited int64
		matches int
	}{
		{1, 2, 1},
		{2, 4, 2},
		{3, 6, 3},
		{4, 7, 4},
		{10, 7, 4},
	}
	for _, tt := range tests {
		req := request(root, hexSHA(target))
		req.MaxDepth = tt.depth
		r := mustWalk(t, context.Background(), req)
		if r.Visited != tt.visited || len(r.Matches) != tt.matches || r.Reason != ReasonNone || r.SkippedUnreadable != 0 {
			t.Errorf("max_depth %d: visited %d matches %d (%+v), want %d and %d", tt.depth, r.Visited, len(r.Matches), r, tt.visited, tt.matches)
		}
	}
}

func TestWalkMaxDepthDirectoryNeverOpened(t *testing.T) {
	root := canonTemp(t)
	mkdir(t, filepath.Join(root, "locked"))
	var opened []string
	setHook(&beforeOpenDir, func(p string) { opened = append(opened, p) })
	defer beforeOpenDir.Store(nil)
	req := request(root, emptySHA)
	req.MaxDepth = 1
	r := mustWalk(t, context.Background(), req)
	if len(opened) != 0 || r.Visited != 1 || r.SkippedUnreadable != 0 {
		t.Fatalf("opened %v, result %+v", opened, r)
	}
}

func TestWalkFileCap(t *testing.T) {
	root := canonTemp(t)
	for i := range 10 {
		writeFile(t, filepath.Join(root, string(rune('a'+i))), []byte{byte(i)})
	}
	req := request(root, emptySHA)
	req.Bounds.MaxVisited = 4
	r := mustWalk(t, context.Background(), req)
	if r.Reason != ReasonFileCap || r.Visited != 4 || r.Hashed > 4 {
		t.Fatalf("got %+v", r)
	}
	if StatusOf(r).Provenance != "filesystem:file_cap" {
		t.Fatalf("status %+v", StatusOf(r))
	}
	// Exactly as many entries as the bound is a complete walk.
	req.Bounds.MaxVisited = 10
	r = mustWalk(t, context.Background(), req)
	if r.Reason != ReasonNone || r.Visited != 10 || r.Hashed != 10 {
		t.Fatalf("at the bound: %+v", r)
	}
}

func TestWalkByteCapSkipsLargerFiles(t *testing.T) {
	root := canonTemp(t)
	for i := range 5 {
		writeFile(t, filepath.Join(root, "big", string(rune('a'+i))), bytes.Repeat([]byte{'x'}, 100))
	}
	writeFile(t, filepath.Join(root, "small"), []byte("0123456789"))
	req := request(root, hexSHA([]byte("0123456789")))
	req.Bounds.MaxBytes = 250
	r := mustWalk(t, context.Background(), req)
	// Two big files fit (200 bytes), three do not; the walk goes on and the
	// small file, listed before or after them, still fits in what is left.
	if r.Reason != ReasonByteCap || r.SkippedOversize != 3 || r.Hashed != 210 || r.Visited != 7 {
		t.Fatalf("got %+v", r)
	}
	if len(r.Matches) != 1 {
		t.Fatalf("the walk stopped at the first oversize file: %+v", r)
	}
	if StatusOf(r).Provenance != "filesystem:byte_cap" {
		t.Fatalf("status %+v", StatusOf(r))
	}
}

func TestWalkPerFileCapDoesNotConstrain(t *testing.T) {
	root := canonTemp(t)
	writeFile(t, filepath.Join(root, "big"), bytes.Repeat([]byte{'x'}, 11))
	writeFile(t, filepath.Join(root, "ok"), bytes.Repeat([]byte{'x'}, 10))
	req := request(root, hexSHA(bytes.Repeat([]byte{'x'}, 10)))
	req.Bounds.MaxFileSize = 10
	// Also below the remaining budget: the per-file cap takes precedence.
	req.Bounds.MaxBytes = 10
	r := mustWalk(t, context.Background(), req)
	if r.Reason != ReasonNone || r.SkippedOversize != 1 || r.Hashed != 10 || len(r.Matches) != 1 {
		t.Fatalf("got %+v", r)
	}
	if StatusOf(r).Constrained {
		t.Fatal("a file over the per-file cap constrained the result")
	}
}

func TestWalkMaxResults(t *testing.T) {
	target := []byte("dup")
	tree := func(n int) string {
		root := canonTemp(t)
		for i := range n {
			writeFile(t, filepath.Join(root, "d", string(rune('a'+i))), target)
		}
		return root
	}
	for _, workers := range []int{1, 4} {
		req := request(tree(6), hexSHA(target))
		req.Bounds.MaxMatches = 5
		req.Workers = workers
		r := mustWalk(t, context.Background(), req)
		if r.Reason != ReasonMaxResults || len(r.Matches) != 5 {
			t.Fatalf("workers %d, 6 matches with a bound of 5: %+v", workers, r)
		}
		for i := 1; i < len(r.Matches); i++ {
			if r.Matches[i-1].Path >= r.Matches[i].Path {
				t.Fatalf("matches not sorted: %v", r.Matches)
			}
		}
		if StatusOf(r).Provenance != "filesystem:max_results" {
			t.Fatalf("status %+v", StatusOf(r))
		}

		req = request(tree(5), hexSHA(target))
		req.Bounds.MaxMatches = 5
		req.Workers = workers
		r = mustWalk(t, context.Background(), req)
		if r.Reason != ReasonNone || len(r.Matches) != 5 || r.Visited != 6 {
			t.Fatalf("workers %d, exactly 5 matches in a full walk: %+v", workers, r)
		}
		if StatusOf(r).Constrained || strings.Contains(rowText(Rows(r)), "truncated") {
			t.Fatal("exactly the bound in a fully walked tree is not clean")
		}
	}
}

func TestWalkDeadline(t *testing.T) {
	root := canonTemp(t)
	for i := range 50 {
		writeFile(t, filepath.Join(root, string(rune('A'+i))), []byte{byte(i)})
	}
	setHook(&beforeOpenFile, func(string) { time.Sleep(5 * time.Millisecond) })
	defer beforeOpenFile.Store(nil)
	req := request(root, emptySHA)
	req.Bounds.Deadline = 30 * time.Millisecond
	start := time.Now()
	r := mustWalk(t, context.Background(), req)
	if r.Reason != ReasonDeadline || r.Visited >= 50 {
		t.Fatalf("got %+v", r)
	}
	if time.Since(start) > 2*time.Second {
		t.Fatalf("deadline honoured late: %v", time.Since(start))
	}
	if StatusOf(r).Provenance != "filesystem:deadline" {
		t.Fatalf("status %+v", StatusOf(r))
	}
}

// TestWalkStuckCallDoesNotHoldTheAnswer blocks the walker inside an "open"
// (as a hung FUSE server would) and expects the answer at the deadline.
func TestWalkStuckCallDoesNotHoldTheAnswer(t *testing.T) {
	root := canonTemp(t)
	writeFile(t, filepath.Join(root, "a"), nil)
	writeFile(t, filepath.Join(root, "b"), nil)
	release := make(chan struct{})
	var stuck atomic.Bool
	setHook(&beforeOpenFile, func(string) {
		if stuck.CompareAndSwap(false, true) {
			<-release
		}
	})
	defer func() {
		close(release)
		time.Sleep(50 * time.Millisecond) // let the walker finish before the hook goes
		beforeOpenFile.Store(nil)
	}()
	req := request(root, emptySHA)
	req.Bounds.Deadline = 50 * time.Millisecond
	start := time.Now()
	r := mustWalk(t, context.Background(), req)
	if took := time.Since(start); took > stopGrace+time.Second {
		t.Fatalf("answer took %v", took)
	}
	if r.Reason != ReasonDeadline || r.Visited != 1 || len(r.Matches) != 0 {
		t.Fatalf("got %+v", r)
	}
}

func TestWalkCancelled(t *testing.T) {
	root := canonTemp(t)
	for i := range 20 {
		writeFile(t, filepath.Join(root, string(rune('a'+i))), []byte{byte(i)})
	}
	t.Run("before start", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := mustWalk(t, ctx, request(root, emptySHA))
		if r.Reason != ReasonCancelled || r.Visited != 0 || r.Hashed != 0 {
			t.Fatalf("got %+v", r)
		}
	})
	t.Run("caller deadline", func(t *testing.T) {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		r := mustWalk(t, ctx, request(root, emptySHA))
		if r.Reason != ReasonCancelled {
			t.Fatalf("got %+v", r)
		}
	})
	t.Run("during the walk", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var n atomic.Int32 // the hook runs on every hasher
		setHook(&beforeOpenFile, func(string) {
			if n.Add(1) == 3 {
				cancel()
				time.Sleep(50 * time.Millisecond) // let the cancellation land
			}
		})
		defer beforeOpenFile.Store(nil)
		r := mustWalk(t, ctx, request(root, emptySHA))
		if r.Reason != ReasonCancelled || r.Visited >= 20 || r.Visited < 3 {
			t.Fatalf("got %+v", r)
		}
		if StatusOf(r).Provenance != "filesystem:cancelled" {
			t.Fatalf("status %+v", StatusOf(r))
		}
	})
}

// TestHashFileBoundsMidFile drives the hasher directly with content larger
// than what the walker admitted (a file that grew after it was judged).
func TestHashFileBoundsMidFile(t *testing.T) {
	newE := func(b Bounds) *engine {
		return newEngine(Request{SHA256: emptySHA, MaxDepth: 1, Bounds: b})
	}
	run := func(e *engine, data []byte) {
		buf := make([]byte, 8)
		e.hashFile(&job{r: readCloser{bytes.NewReader(data)}, size: -1, dir: "/x"}, buf, sha256.New(), nil)
	}

	b := DefaultBounds()
	b.MaxBytes = 20
	e := newE(b)
	run(e, bytes.Repeat([]byte{1}, 100))
	if r := e.result(); r.Reason != ReasonByteCap || r.Hashed != 20 {
		t.Fatalf("byte cap mid-file: %+v", r)
	}

	b = DefaultBounds()
	b.MaxFileSize = 20
	e = newE(b)
	run(e, bytes.Repeat([]byte{1}, 100))
	if r := e.result(); r.Reason != ReasonNone || r.SkippedOversize != 1 || r.Hashed != 24 {
		t.Fatalf("per-file cap mid-file: %+v", r)
	}

	e = newE(DefaultBounds())
	e.trip(ReasonDeadline)
	run(e, []byte("abc"))
	if r := e.result(); r.Reason != ReasonDeadline || r.Hashed != 0 || len(r.Matches) != 0 {
		t.Fatalf("stopped before reading: %+v", r)
	}

	e = newE(DefaultBounds())
	e.hashFile(&job{r: readCloser{errReader{}}, size: -1, dir: "/x"}, make([]byte, 8), sha256.New(), nil)
	if r := e.result(); r.SkippedUnreadable != 1 || len(r.Matches) != 0 {
		t.Fatalf("read error: %+v", r)
	}
}

type readCloser struct {
	r interface{ Read([]byte) (int, error) }
}

func (r readCloser) Read(b []byte) (int, error) { return r.r.Read(b) }
func (readCloser) Close() error                 { return nil }

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, unix.EIO }

func TestWalkRootChecks(t *testing.T) {
	root := canonTemp(t)
	writeFile(t, filepath.Join(root, "f"), nil)
	writeFile(t, filepath.Join(root, "nfs", "f"), nil)
	writeFile(t, filepath.Join(root, "nfsx", "f"), nil)
	writeFile(t, filepath.Join(root, "procish", "f"), nil)
	writeFile(t, filepath.Join(root, "bound-file"), nil)
	tab := mounts.NewTable([]mounts.Mount{
		{Point: "/", FSType: "ext4"},
		{Point: root + "/nfs", FSType: "nfs4"},
		{Point: root + "/procish", FSType: "proc"},
		{Point: root + "/bound-file", FSType: "cifs"},
	})

	t.Run("network and pseudo below the root", func(t *testing.T) {
		req := request(root, emptySHA)
		req.Mounts = tab
		var opened []string
		setHook(&beforeOpenDir, func(p string) { opened = append(opened, p) })
		defer beforeOpenDir.Store(nil)
		r := mustWalk(t, context.Background(), req)
		want := Counters{Visited: 6, SkippedNetworkMount: 2, SkippedUnreadable: 1}
		if r.Counters != want {
			t.Fatalf("got %+v, want %+v", r.Counters, want)
		}
		if got := matchPaths(r); len(got) != 2 || got[0] != root+"/f" || got[1] != root+"/nfsx/f" {
			t.Fatalf("matches %q", got)
		}
		if len(opened) != 1 || opened[0] != root+"/nfsx" {
			t.Fatalf("opened %q: the guard must refuse before touching", opened)
		}
		if StatusOf(r).Provenance != "filesystem:skipped_unreadable" {
			t.Fatalf("status %+v", StatusOf(r))
		}
	})
	t.Run("root on a network mount", func(t *testing.T) {
		req := request(root+"/nfs", emptySHA)
		req.Mounts = tab
		r := mustWalk(t, context.Background(), req)
		if r.Counters != (Counters{SkippedNetworkMount: 1}) || len(r.Matches) != 0 {
			t.Fatalf("got %+v", r)
		}
		if StatusOf(r).Provenance != "filesystem:skipped_network_mount" {
			t.Fatalf("status %+v", StatusOf(r))
		}
	})
	t.Run("root on a pseudo filesystem by the table", func(t *testing.T) {
		req := request(root+"/procish", emptySHA)
		req.Mounts = tab
		r := mustWalk(t, context.Background(), req)
		if r.Counters != (Counters{SkippedUnreadable: 1}) {
			t.Fatalf("got %+v", r)
		}
	})
	t.Run("root missing", func(t *testing.T) {
		r := mustWalk(t, context.Background(), request(root+"/missing", emptySHA))
		if r.Counters != (Counters{SkippedUnreadable: 1}) {
			t.Fatalf("got %+v", r)
		}
		if got := rowText(Rows(r)); got != "truncated|none|visited=0|hashed=0|skipped_unreadable=1|skipped_symlink=0|skipped_not_regular=0|skipped_oversize=0|skipped_network_mount=0\nmatches_found|0" {
			t.Fatalf("rows %q", got)
		}
	})
	t.Run("root is a symlink", func(t *testing.T) {
		bothOpenModes(t, func(t *testing.T) {
			link := filepath.Join(canonTemp(t), "link")
			symlink(t, root, link)
			r := mustWalk(t, context.Background(), request(link, emptySHA))
			if r.Counters != (Counters{SkippedUnreadable: 1}) {
				t.Fatalf("got %+v", r)
			}
		})
	})
	t.Run("symlink in a component of the root", func(t *testing.T) {
		bothOpenModes(t, func(t *testing.T) {
			link := filepath.Join(canonTemp(t), "link")
			symlink(t, root, link)
			r := mustWalk(t, context.Background(), request(link+"/nfsx", emptySHA))
			if r.Counters != (Counters{SkippedUnreadable: 1}) {
				t.Fatalf("got %+v", r)
			}
		})
	})
}

func TestWalkProcRoot(t *testing.T) {
	live, err := mounts.Load()
	if err != nil {
		t.Fatalf("mount table: %v", err)
	}
	for _, tc := range []struct {
		name string
		tab  *mounts.Table
	}{{"with the mount table", live}, {"without the mount table", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			req := request("/proc", emptySHA)
			req.Mounts = tc.tab
			r := mustWalk(t, context.Background(), req)
			if r.Counters != (Counters{SkippedUnreadable: 1}) || r.GuardUnavailable != (tc.tab == nil) {
				t.Fatalf("got %+v", r)
			}
			if StatusOf(r).Provenance != "filesystem:skipped_unreadable" {
				t.Fatalf("status %+v", StatusOf(r))
			}
			rows := rowText(Rows(r))
			if strings.Contains(rows, "network_mount_guard|unavailable") != (tc.tab == nil) {
				t.Fatalf("rows %q", rows)
			}
		})
	}
	t.Run("proc below the root", func(t *testing.T) {
		// /sys/fs is small: its cgroup entries are pseudo mounts of their own.
		req := request("/sys", emptySHA)
		req.Mounts = nil
		req.MaxDepth = 2
		r := mustWalk(t, context.Background(), req)
		if r.SkippedUnreadable != 1 || r.Visited != 0 {
			t.Fatalf("/sys as root: %+v", r)
		}
	})
}

func TestWalkRequestErrors(t *testing.T) {
	root := canonTemp(t)
	bad := []Request{
		{Root: "relative", MaxDepth: 1, Bounds: DefaultBounds()},
		{Root: root, MaxDepth: 0, Bounds: DefaultBounds()},
		{Root: root, MaxDepth: 1},
	}
	for _, req := range bad {
		if _, err := Walk(context.Background(), req); err == nil {
			t.Errorf("no error for %+v", req)
		}
	}
}

func TestWalkManyEntriesInOneDirectory(t *testing.T) {
	root := canonTemp(t)
	const n = 3000 // several getdents batches
	for i := range n {
		name := filepath.Join(root, "d", strings.Repeat("n", 40)+string(rune('0'+i%10))+hex.EncodeToString([]byte{byte(i >> 8), byte(i)}))
		writeFile(t, name, nil)
	}
	r := mustWalk(t, context.Background(), request(root, emptySHA))
	if r.Visited >= n+1 || r.Reason != ReasonMaxResults || len(r.Matches) != 100 {
		t.Fatalf("got visited %d reason %s matches %d", r.Visited, r.Reason, len(r.Matches))
	}
	r = mustWalk(t, context.Background(), request(root, hexSHA([]byte("x"))))
	if r.Visited != n+1 || r.Reason != ReasonNone || r.Hashed != 0 {
		t.Fatalf("got %+v", r)
	}
}

func TestDirentType(t *testing.T) {
	tests := map[uint32]uint8{
		unix.S_IFREG: unix.DT_REG, unix.S_IFDIR: unix.DT_DIR, unix.S_IFLNK: unix.DT_LNK,
		unix.S_IFIFO: unix.DT_FIFO, unix.S_IFSOCK: unix.DT_SOCK, unix.S_IFCHR: unix.DT_CHR,
		unix.S_IFBLK: unix.DT_BLK, 0: unix.DT_UNKNOWN,
	}
	for mode, want := range tests {
		if got := direntType(mode | 0o644); got != want {
			t.Errorf("direntType(%o) = %d, want %d", mode, got, want)
		}
	}
}

func setHook(h *atomic.Pointer[func(string)], f func(string)) { h.Store(&f) }
