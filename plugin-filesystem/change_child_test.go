//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/sdktest"
)

// TestChangeChild runs this group's actions through the real plugin binary, started
// the way the agent starts it. The binary is built once for all subtests.
func TestChangeChild(t *testing.T) {
	bin := sdktest.Build(t, ".")
	data := t.TempDir()
	t.Run("actions", func(t *testing.T) { childActions(t, bin, data) })
	t.Run("kill during writes", func(t *testing.T) { childKills(t, bin, data) })
	t.Run("swap race", func(t *testing.T) { childSwapRace(t, bin, data) })
	t.Run("search 100 MiB", func(t *testing.T) { childSearchBig(t, bin) })
}

// childActions: every action of the group once through the child, rows as in process.
func childActions(t *testing.T, bin, data string) {
	h := sdktest.Start(t, bin, sdk.Config{DataDir: data})
	dir := t.TempDir()
	f := filepath.Join(dir, "c.conf")
	chgWrite(t, f, "a=1\nb=2\n", 0o640)
	steps := []struct {
		action string
		params map[string]string
		want   string
		file   string
	}{
		{"search", map[string]string{"path": f, "pattern": "b="}, "match|2|b=2\ntotal_matches|1", "a=1\nb=2\n"},
		{"replace", map[string]string{"path": f, "search": `(\w)=(\d)`, "replacement": "$2=$1", "regex": "true"},
			"replacements_made|2\nfile_size_before|8\nfile_size_after|8", "1=a\n2=b\n"},
		{"append", map[string]string{"path": f, "content": "c=3"}, "status|ok\nbytes_appended|3\ntotal_size|11", "1=a\n2=b\nc=3"},
		{"delete_lines", map[string]string{"path": f, "start_line": "1", "end_line": "1"},
			"lines_deleted|1\ntotal_lines_before|3\ntotal_lines_after|2", "2=b\nc=3\n"},
		{"write_content", map[string]string{"path": f, "content": "new", "overwrite": "true"},
			"status|ok\nbytes_written|3\npath|" + f, "new"},
		{"write_content", map[string]string{"path": f, "content": "x", "create": "true"}, "error|file exists and overwrite=false", "new"},
	}
	for _, s := range steps {
		o := h.Run(s.action, s.params)
		if got := strings.Join(o.Rows, "\n"); got != s.want {
			t.Errorf("%s: %q, want %q", s.action, got, s.want)
		}
		if c := chgRead(t, f); c != s.file {
			t.Errorf("%s: file %q, want %q", s.action, c, s.file)
		}
	}
	if m := chgStat(t, f).Mode & 0o777; m != 0o640 {
		t.Errorf("mode %o", m)
	}
	for _, action := range []string{"create_temp", "create_temp_dir"} {
		o := h.Run(action, map[string]string{"directory": dir, "persist": "false"})
		if len(o.Rows) != 3 || o.Rows[2] != "cleanup|deleted" || o.Result.Code != 0 {
			t.Errorf("%s: %s", action, o)
		}
	}
}

// childPid returns the process id of the plugin child behind h.
func childPid(t testing.TB, h *sdktest.Harness) int {
	t.Helper()
	rc := h.Client.ReattachConfig()
	if rc == nil || rc.Pid == 0 {
		t.Fatal("no child pid")
	}
	return rc.Pid
}

// killFigures are what the kill test counts.
type killFigures struct {
	sync.Mutex
	kills, old, new, torn, lost, leftovers, finishedFirst int
}

// childKills SIGKILLs the plugin child while it runs replace or write_content on an
// 8 MB file, 200 times, and checks after every kill that the file holds exactly the
// old or exactly the new content. A kill between the temp file's creation and the
// rename leaves that temp file; the next write of the target, holding the write lock,
// removes it, so after the last (unkilled) write no temp file may remain.
func childKills(t *testing.T, bin, data string) {
	const (
		workers = 4
		kills   = 200
		size    = 8 << 20 // under the 16 MiB a command's parameters may carry
	)
	var fig killFigures
	start := time.Now()
	t.Run("workers", func(t *testing.T) {
		for w := range workers {
			t.Run(strconv.Itoa(w), func(t *testing.T) {
				t.Parallel()
				killWorker(t, bin, data, w, kills/workers, size, &fig)
			})
		}
	})
	t.Logf("kills %d: old %d, new %d, torn %d, lost %d; temp files found right after a kill %d (all removed by the next write); "+
		"commands that finished before their kill %d; %.1fs",
		fig.kills, fig.old, fig.new, fig.torn, fig.lost, fig.leftovers, fig.finishedFirst, time.Since(start).Seconds())
	if fig.kills != kills || fig.torn != 0 || fig.lost != 0 {
		t.Errorf("kills %d, torn %d, lost %d", fig.kills, fig.torn, fig.lost)
	}
	if fig.leftovers == 0 {
		t.Error("no kill landed between a temp file's creation and its rename: the test does not exercise the crash window")
	}
}

func killWorker(t *testing.T, bin, data string, w, n, size int, fig *killFigures) {
	dir := t.TempDir()
	f := filepath.Join(dir, "big.conf")
	rng := rand.New(rand.NewPCG(uint64(w), 99))
	cur := killContent(rng, size, "AAAA")
	if err := os.WriteFile(f, cur, 0o640); err != nil {
		t.Error(err)
		return
	}
	// How long one command takes, to spread the kills over its whole run.
	h := sdktest.Start(t, bin, sdk.Config{DataDir: data})
	t0 := time.Now()
	if o := h.Run("replace", map[string]string{"path": f, "search": "AAAA", "replacement": "BBBB"}); o.Result.Code != 0 {
		t.Errorf("calibration: %s", o)
		return
	}
	span := time.Since(t0)
	cur = bytes.ReplaceAll(cur, []byte("AAAA"), []byte("BBBB"))
	for i := range n {
		var action string
		var params map[string]string
		var next []byte
		if i%2 == 0 {
			from, to := "BBBB", "AAAA"
			if bytes.Contains(cur, []byte("AAAA")) {
				from, to = "AAAA", "BBBB"
			}
			action, params = "replace", map[string]string{"path": f, "search": from, "replacement": to}
			next = bytes.ReplaceAll(cur, []byte(from), []byte(to))
		} else {
			// Fresh content, still made of AAAA lines so the next replace has work.
			next = append([]byte(fmt.Sprintf("written by worker %d, step %d\n", w, i)), killContent(rng, size-rng.IntN(1<<20), "AAAA")...)
			action, params = "write_content", map[string]string{"path": f, "content": string(next), "overwrite": "true"}
		}
		if bytes.Equal(next, cur) {
			t.Fatalf("step %d would not change the file", i)
		}
		if i > 0 {
			h = sdktest.Start(t, bin, sdk.Config{DataDir: data})
		}
		pid := childPid(t, h)
		res := make(chan sdktest.Outcome, 1)
		go func() {
			o, _ := h.RunContext(context.Background(), action, params)
			res <- o
		}()
		time.Sleep(time.Duration(rng.Int64N(int64(span * 5 / 4))))
		_ = syscall.Kill(pid, syscall.SIGKILL)
		o := <-res
		h.Client.Kill()

		got, err := os.ReadFile(f)
		fig.Lock()
		fig.kills++
		if o.Result.Code == 0 && len(o.Rows) > 0 {
			fig.finishedFirst++
		}
		switch {
		case err != nil:
			fig.lost++
		case sha256.Sum256(got) == sha256.Sum256(cur):
			fig.old++

		case sha256.Sum256(got) == sha256.Sum256(next):
			fig.new++
			cur = next
		default:
			fig.torn++
		}
		fig.leftovers += len(chgTemps(t, dir, "big.conf"))
		fig.Unlock()
		if err != nil {
			t.Errorf("target lost: %v", err)
			return
		}
		if m := chgStat(t, f).Mode & 0o777; m != 0o640 {
			t.Errorf("mode %o after kill", m)
		}
	}
	// One last write that is not killed removes what the kills left.
	h = sdktest.Start(t, bin, sdk.Config{DataDir: data})
	if o := h.Run("write_content", map[string]string{"path": f, "content": "final", "overwrite": "true"}); o.Result.Code != 0 {
		t.Errorf("final write: %s", o)
	}
	if tmp := chgTemps(t, dir, "big.conf"); len(tmp) != 0 {
		t.Errorf("temp files left after the final write: %v", tmp)
	}
}

// killContent returns about size bytes of lines carrying token, different every call.
func killContent(rng *rand.Rand, size int, token string) []byte {
	var b bytes.Buffer
	b.Grow(size + 100)
	for b.Len() < size {
		fmt.Fprintf(&b, "%s line %016x value=%d\n", token, rng.Uint64(), rng.IntN(1e9))
	}
	return b.Bytes()
}

// childSwapRace: a local attacker flips a file inside base_dir between itself and a
// link to a file outside, as fast as it can, while the child keeps changing it. Every
// command must either change the real file or refuse; the outside file never changes.
func childSwapRace(t *testing.T, bin, data string) {
	h := sdktest.Start(t, bin, sdk.Config{DataDir: data})
	base := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret")
	chgWrite(t, outside, "SECRET old\n", 0o600)
	target := filepath.Join(base, "t.conf")
	chgWrite(t, target, "old\n", 0o644)
	ctx, stop := context.WithCancel(context.Background())
	var flips int
	done := make(chan struct{})
	go func() {
		defer close(done)
		link := filepath.Join(base, "link")
		for ctx.Err() == nil {
			_ = os.Remove(link)
			_ = os.Symlink(outside, link)
			_ = os.Rename(target, target+".real")
			_ = os.Rename(link, target) // target is now a link outside
			_ = os.Rename(target+".real", target)
			flips++
		}
	}()
	ok, refused := 0, 0
	actions := []map[string]string{
		{"action": "replace", "search": "old", "replacement": "old"},
		{"action": "replace", "search": "SECRET", "replacement": "PWNED"},
		{"action": "write_content", "content": "PWNED\n", "overwrite": "true"},
		{"action": "append", "content": "PWNED"},
		{"action": "delete_lines", "start_line": "1", "end_line": "1"},
		{"action": "search", "pattern": "SECRET"},
	}
	deadline := time.Now().Add(3 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		a := actions[i%len(actions)]
		p := map[string]string{"path": target, "base_dir": base}
		for k, v := range a {
			if k != "action" {
				p[k] = v
			}
		}
		o := h.Run(a["action"], p)
		if strings.Contains(strings.Join(o.Rows, "\n"), "SECRET") {
			t.Errorf("ESCAPE: %s", o)
		}
		if o.Result.Code == 0 {
			ok++
		} else {
			refused++
		}
	}
	stop()
	<-done
	if c := chgRead(t, outside); c != "SECRET old\n" {
		t.Errorf("ESCAPE: outside file now %q", c)
	}
	t.Logf("swap race: %d flips, %d commands done, %d refused, outside file unchanged", flips, ok, refused)
}

// childSearchBig searches a 100 MiB file through the child and checks the child's peak
// memory stays under 64 MB, timing grep on the same file for comparison.
func childSearchBig(t *testing.T, bin string) {
	file := searchBenchFile(t)
	h := sdktest.Start(t, bin, sdk.Config{})
	pid := childPid(t, h)
	for _, c := range searchChildCases {
		params := c.params(file)
		t0 := time.Now()
		o := h.Run("search", params)
		took := time.Since(t0)
		if o.Result.Code != 0 {
			t.Fatalf("%s: %s", c.name, o)
		}
		n := len(o.Rows) - 1
		g, gn := grepTime(t, file, c)
		if gn != n {
			t.Errorf("%s: grep found %d lines, search %d", c.name, gn, n)
		}
		t.Logf("%-22s %6d matches  child %7.0f ms  grep %7.0f ms  ratio %.2f", c.name, n,
			float64(took.Microseconds())/1000, float64(g.Microseconds())/1000, took.Seconds()/g.Seconds())
	}
	hwm := peakRSS(t, pid)
	t.Logf("child peak RSS after searching 100 MiB %d ways: %.1f MB", len(searchChildCases), float64(hwm)/1e6)
	if hwm >= 64e6 {
		t.Errorf("child peak RSS %d bytes, want under 64 MB", hwm)
	}
}

// searchChildCases are the end-to-end search cases, the same patterns as the
// searcher's own benchmark (internal/pattern) and bench/search_vs_grep.sh.
var searchChildCases = []searchChildCase{
	{"literal", "ERROR disk", false, false, []string{"-F", "-e", "ERROR disk"}},
	{"literal case-insensitive", "error disk", false, true, []string{"-i", "-F", "-e", "error disk"}},
	{"regex with literal", `disk sd[a-z][0-9]+ failed`, true, false, []string{"-E", "-e", `disk sd[a-z][0-9]+ failed`}},
	{"regex without literal", `[A-Z]{5}\s[a-z]{4}\s[a-z]{2}[a-z][0-9]`, true, false,
		[]string{"-E", "-e", `[A-Z]{5}[[:space:]][a-z]{4}[[:space:]][a-z]{2}[a-z][0-9]`}},
}

type searchChildCase struct {
	name    string
	pattern string
	regex   bool
	fold    bool     // case_sensitive=false
	grep    []string // grep's arguments for the same search
}

// params are the search action's parameters for the case.
func (c searchChildCase) params(file string) map[string]string {
	return map[string]string{"path": file, "pattern": c.pattern, "regex": strconv.FormatBool(c.regex),
		"case_sensitive": strconv.FormatBool(!c.fold), "max_matches": "10000"}
}

// grepTime runs LC_ALL=C grep -n -m 10000 on file, best of three, and counts its lines.
func grepTime(t testing.TB, file string, c searchChildCase) (time.Duration, int) {
	t.Helper()
	best := time.Duration(1<<63 - 1)
	var n int
	for range 3 {
		args := append([]string{"-n", "-m", "10000"}, c.grep...)
		cmd := exec.Command("grep", append(args, file)...)
		cmd.Env = []string{"LC_ALL=C", "PATH=" + os.Getenv("PATH")}
		var out bytes.Buffer
		cmd.Stdout = &out
		t0 := time.Now()
		err := cmd.Run()
		d := time.Since(t0)
		if err != nil && cmd.ProcessState.ExitCode() != 1 {
			t.Fatalf("grep: %v", err)
		}
		best = min(best, d)
		n = bytes.Count(out.Bytes(), []byte{'\n'})
	}
	return best, n
}

// peakRSS reads the high-water mark of a process's resident memory.
func peakRSS(t testing.TB, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb * 1024
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// searchBenchFile returns a log file of just under 100 MiB (the most search accepts):
// SEARCH_CHILD_BENCH_FILE when set (written there when missing, so
// bench/search_vs_grep.sh can time grep on the same bytes), else a new one in the
// test's temporary directory.
func searchBenchFile(t testing.TB) string {
	t.Helper()
	name := os.Getenv("SEARCH_CHILD_BENCH_FILE")
	if name == "" {
		name = filepath.Join(t.TempDir(), "search.log")
	}
	if fi, err := os.Stat(name); err == nil && fi.Size() > maxTextFile-200 && fi.Size() <= maxTextFile {
		return name
	}
	if err := writeSearchBenchFile(name); err != nil {
		t.Fatal(err)
	}
	return name
}

// writeSearchBenchFile writes deterministic log lines up to the 100 MiB cap, about one
// in a thousand an ERROR line the cases look for (the searcher benchmark's mix).
func writeSearchBenchFile(path string) error {
	tmp := path + ".partial"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(42, 7))
	for n := 0; ; {
		ts := fmt.Sprintf("2026-10-04T%02d:%02d:%02d.%03dZ host-%02d app[%d]:",
			rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(1000), rng.IntN(40), 1000+rng.IntN(9000))
		var line string
		switch r := rng.IntN(1000); {
		case r == 0:
			line = fmt.Sprintf("%s ERROR disk sd%c%d failed: I/O error at sector %d\n",
				ts, 'a'+rune(rng.IntN(4)), 1+rng.IntN(9), rng.IntN(1<<30))
		case r < 30:
			line = fmt.Sprintf("%s WARN slow request id=%08x path=/api/v1/items/%d dur=%dms\n",
				ts, rng.Uint32(), rng.IntN(100000), 500+rng.IntN(5000))
		default:
			line = fmt.Sprintf("%s INFO request id=%08x path=/api/v1/items/%d status=200 dur=%dms\n",
				ts, rng.Uint32(), rng.IntN(100000), rng.IntN(500))
		}
		if n+len(line) > maxTextFile {
			break
		}
		k, err := w.WriteString(line)
		if err != nil {
			f.Close()
			return err
		}
		n += k
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// BenchmarkSearchChild times the search action end to end (agent side of the
// protocol, a real plugin child, 100 MiB file, up to 10000 matches streamed back) and
// reports the child's peak RSS. bench/search_vs_grep.sh compares it with grep.
func BenchmarkSearchChild(b *testing.B) {
	bin := sdktest.Build(b, ".")
	file := searchBenchFile(b)
	fi, err := os.Stat(file)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range searchChildCases {
		b.Run(strings.ReplaceAll(c.name, " ", "_"), func(b *testing.B) {
			h := sdktest.Start(b, bin, sdk.Config{})
			params := c.params(file)
			b.SetBytes(fi.Size())
			var matches int
			for b.Loop() {
				o := h.Run("search", params)
				if o.Result.Code != 0 {
					b.Fatal(o)
				}
				matches = len(o.Rows) - 1
			}
			b.ReportMetric(float64(matches), "matches")
			b.ReportMetric(float64(peakRSS(b, childPid(b, h)))/1e6, "peak-RSS-MB")
		})
	}
}

// TestWriteLockFilesPrivate: another local user cannot open the write-lock files (so
// cannot hold them and stall the agent's writes), and a lock directory that others
// could write to is not used at all: the change still happens, but without the
// cross-process lock it leaves stale temp files alone.
func TestWriteLockFilesPrivate(t *testing.T) {
	// Directories anyone may enter (t.TempDir's parent is private), so the only thing
	// keeping another user out of the lock files is the lock directory's own mode.
	root, err := os.MkdirTemp("", "yuzu-fs-lock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	data, dir := filepath.Join(root, "data"), filepath.Join(root, "files")
	for _, d := range []string{root, data, dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h := sdktest.New(t, newPlugin(), sdk.Config{DataDir: data})
	f := filepath.Join(dir, "t.conf")
	chgWrite(t, f, "old\n", 0o644)
	if o := h.Run("replace", map[string]string{"path": f, "search": "old", "replacement": "new"}); o.Result.Code != 0 {
		t.Fatal(o)
	}
	locks, err := filepath.Glob(filepath.Join(data, "filesystem", "write-locks", "*"))
	if err != nil || len(locks) != 1 {
		t.Fatalf("lock files %v %v", locks, err)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to start a process as another user")
	}
	asNobody := func(path string) error {
		cmd := exec.Command("/bin/sh", "-c", `: < "$1"`, "sh", path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	if err := asNobody(f); err != nil {
		t.Fatalf("control: nobody cannot read a world-readable file: %v", err)
	}
	if err := asNobody(locks[0]); err == nil {
		t.Error("another user could open the lock file")
	}

	// A lock directory others can write to is refused.
	if err := os.Chmod(filepath.Join(data, "filesystem", "write-locks"), 0o777); err != nil {
		t.Fatal(err)
	}
	stale := f + ".tmp.0123456789abcdef"
	chgWrite(t, stale, "half", 0o600)
	if o := h.Run("replace", map[string]string{"path": f, "search": "new", "replacement": "newer"}); o.Result.Code != 0 {
		t.Fatal(o)
	}
	if chgRead(t, f) != "newer\n" || chgRead(t, stale) != "half" {
		t.Error("with an untrusted lock directory the change must happen and the stale file stay")
	}
}
