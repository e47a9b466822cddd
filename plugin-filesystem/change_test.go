//go:build unix

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/cryptotest"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/filelock"
	"github.com/yuzugo/yuzu/sdk/sdktest"
)

// chgHarness runs the plugin in process with a private data directory, so the
// cross-process write lock (and with it the removal of stale temp files) is active as
// it is under the agent.
func chgHarness(t *testing.T) *sdktest.Harness {
	t.Helper()
	return sdktest.New(t, newPlugin(), sdk.Config{DataDir: t.TempDir()})
}

// chgRun runs one action and returns its rows joined by newlines and its return code.
func chgRun(t *testing.T, h *sdktest.Harness, action string, params map[string]string) (string, int) {
	t.Helper()
	o := h.Run(action, params)
	return strings.Join(o.Rows, "\n"), o.Result.Code
}

func chgWrite(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func chgRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func chgStat(t *testing.T, path string) *syscall.Stat_t {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t)
}

func chgModTime(t *testing.T, path string) time.Time {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}

// chgTemps lists the atomic writer's temp files of base in dir.
func chgTemps(t *testing.T, dir, base string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if atomicfile.IsTempName(base, e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// chgUmask reads the process umask without changing it.
func chgUmask(t *testing.T) os.FileMode {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		// No procfs (macOS): set and restore at once.
		m := unix.Umask(0o22)
		unix.Umask(m)
		return os.FileMode(m)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			if err != nil {
				t.Fatal(err)
			}
			return os.FileMode(m)
		}
	}
	t.Fatal("no Umask line in /proc/self/status")
	return 0
}

func TestChangeDefinitionsMatchDeclarations(t *testing.T) {
	sdktest.CheckDefinitions(t, newPlugin())
}

func TestSearchRows(t *testing.T) {
	h := chgHarness(t)
	dir := t.TempDir()
	f := filepath.Join(dir, "f.txt")
	chgWrite(t, f, "alpha\nBeta line\r\nGAMMA alpha\n\nlast alpha\x00tail", 0o644)
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, maxTextFile+1); err != nil {
		t.Fatal(err)
	}
	edge := filepath.Join(dir, "edge.txt")
	chgWrite(t, edge, "", 0o644)
	if err := os.Truncate(edge, maxTextFile); err != nil { // exactly the cap: allowed
		t.Fatal(err)
	}
	all := "match|1|alpha\nmatch|3|GAMMA alpha\nmatch|5|last alpha\x00tail\ntotal_matches|3"
	tests := []struct {
		name   string
		params map[string]string
		want   string
		rc     int
	}{
		{"literal", map[string]string{"pattern": "alpha"}, all, 0},
		{"literal case-insensitive, CR stripped", map[string]string{"pattern": "beta", "case_sensitive": "false"},
			"match|2|Beta line\ntotal_matches|1", 0},
		{"literal case-sensitive miss", map[string]string{"pattern": "beta"}, "total_matches|0", 0},
		{"regex anchored start", map[string]string{"pattern": "^al", "regex": "true"}, "match|1|alpha\ntotal_matches|1", 0},
		{"regex anchored end of line", map[string]string{"pattern": "a$", "regex": "true"},
			"match|1|alpha\nmatch|3|GAMMA alpha\ntotal_matches|2", 0},
		{"regex case-insensitive", map[string]string{"pattern": "b.ta|gamma", "regex": "true", "case_sensitive": "false"},
			"match|2|Beta line\nmatch|3|GAMMA alpha\ntotal_matches|2", 0},
		{"regex empty line", map[string]string{"pattern": "^$", "regex": "true"}, "match|4|\ntotal_matches|1", 0},
		{"max_matches 2", map[string]string{"pattern": "alpha", "max_matches": "2"},
			"match|1|alpha\nmatch|3|GAMMA alpha\ntotal_matches|2", 0},
		{"max_matches 0 clamps to 1", map[string]string{"pattern": "alpha", "max_matches": "0"},
			"match|1|alpha\ntotal_matches|1", 0},
		{"max_matches above 10000 clamps", map[string]string{"pattern": "alpha", "max_matches": "2000000"}, all, 0},
		{"max_matches junk", map[string]string{"pattern": "alpha", "max_matches": "12abc"},
			`error|parameter max_matches: not a valid int32: "12abc"`, 1},
		{"nested quantifiers that expand too far", map[string]string{"pattern": "(?:a{500}){3}", "regex": "true"}, "error|" + msgNested, 1},
		{"nested quantifiers Go cannot compile", map[string]string{"pattern": "(a{1000}){1000}", "regex": "true"}, "error|" + msgNested, 1},
		{"nested quantifiers upstream refused are fine", map[string]string{"pattern": "(l+p+h?)+a", "regex": "true"},
			"match|1|alpha\nmatch|3|GAMMA alpha\nmatch|5|last alpha\x00tail\ntotal_matches|3", 0},
		{"nested quantifiers ignored for literals", map[string]string{"pattern": "(?:a{500}){3}"}, "total_matches|0", 0},
		{"invalid regex", map[string]string{"pattern": "(", "regex": "true"}, "error|invalid regex: missing closing ): `(`", 1},
		{"backreference", map[string]string{"pattern": `(a)\1`, "regex": "true"},
			"error|invalid regex: invalid escape sequence: `\\1`", 1},
		{"pattern too long", map[string]string{"pattern": strings.Repeat("a", 257)}, "error|pattern too long (max 256 chars)", 1},
		{"pattern of 256 bytes", map[string]string{"pattern": strings.Repeat("a", 256)}, "total_matches|0", 0},
		{"missing pattern", map[string]string{"pattern": ""}, "error|missing required parameters: path, pattern", 1},
		{"missing path", map[string]string{"path": "", "pattern": "x"}, "error|missing required parameters: path, pattern", 1},
		{"not found", map[string]string{"path": filepath.Join(dir, "nope"), "pattern": "x"}, "error|" + msgNotAccessible, 1},
		{"directory", map[string]string{"path": dir, "pattern": "x"}, "error|" + msgNotRegular, 1},
		{"device", map[string]string{"path": "/dev/zero", "pattern": "x"}, "error|" + msgNotRegular, 1},
		{"over 100 MiB", map[string]string{"path": big, "pattern": "x"}, "error|file too large (104857601 bytes, max 104857600)", 1},
		{"exactly 100 MiB", map[string]string{"path": edge, "pattern": "x"}, "total_matches|0", 0},
		{"outside base_dir", map[string]string{"pattern": "alpha", "base_dir": t.TempDir()}, "error|" + msgNotAccessible, 1},
		{"inside base_dir", map[string]string{"pattern": "last", "base_dir": dir}, "match|5|last alpha\x00tail\ntotal_matches|1", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := map[string]string{"path": f}
			for k, v := range tc.params {
				p[k] = v
			}
			got, rc := chgRun(t, h, "search", p)
			if got != tc.want || rc != tc.rc {
				t.Errorf("got rc %d\n%q\nwant rc %d\n%q", rc, got, tc.rc, tc.want)
			}
		})
	}
}

// TestSearchLongLine: a line longer than the searcher's buffer is matched as a whole
// and shown cut, followed by a warning row saying so; the lines around it are normal.
func TestSearchLongLine(t *testing.T) {
	h := chgHarness(t)
	f := filepath.Join(t.TempDir(), "long.txt")
	long := strings.Repeat("x", 300<<10) + "NEEDLE"
	chgWrite(t, f, "NEEDLE first\n"+long+"\nlast NEEDLE\n", 0o644)
	o := h.Run("search", map[string]string{"path": f, "pattern": "NEEDLE"})
	want := []string{
		"match|1|NEEDLE first",
		"match|2|" + long[:256<<10],
		"warning|line 2 is longer than 262144 bytes; its match row shows only the first 262144 bytes",
		"match|3|last NEEDLE",
		"total_matches|3",
	}
	if o.Result.Code != 0 || !slices.Equal(o.Rows, want) {
		t.Fatalf("rc %d, %d rows; want %d rows", o.Result.Code, len(o.Rows), len(want))
	}
}

func TestReplaceRows(t *testing.T) {
	h := chgHarness(t)
	dir := t.TempDir()
	const orig = "key=one\r\nname=two\nkey=three\n"
	tests := []struct {
		name    string
		params  map[string]string
		want    string
		rc      int
		content string // the file afterwards
	}{
		{"literal all", map[string]string{"search": "key", "replacement": "k"},
			"replacements_made|2\nfile_size_before|28\nfile_size_after|24", 0, "k=one\r\nname=two\nk=three\n"},
		{"literal limit", map[string]string{"search": "key", "replacement": "k", "max_replacements": "1"},
			"replacements_made|1\nfile_size_before|28\nfile_size_after|26", 0, "k=one\r\nname=two\nkey=three\n"},
		{"literal case-insensitive", map[string]string{"search": "KEY", "replacement": "K", "case_sensitive": "false"},
			"replacements_made|2\nfile_size_before|28\nfile_size_after|24", 0, "K=one\r\nname=two\nK=three\n"},
		{"literal case-sensitive miss: no write", map[string]string{"search": "KEY", "replacement": "K"},
			"replacements_made|0\nfile_size_before|28\nfile_size_after|28", 0, orig},
		{"literal keeps $1", map[string]string{"search": "one", "replacement": "$1$&"},
			"replacements_made|1\nfile_size_before|28\nfile_size_after|29", 0, "key=$1$&\r\nname=two\nkey=three\n"},
		{"empty replacement removes", map[string]string{"search": "key="},
			"replacements_made|2\nfile_size_before|28\nfile_size_after|20", 0, "one\r\nname=two\nthree\n"},
		{"regex all expands ECMAScript references", map[string]string{"search": `(\w+)=(\w+)`, "replacement": "$2:$1 [$&] $$", "regex": "true"},
			"replacements_made|3\nfile_size_before|28\nfile_size_after|67", 0,
			"one:key [key=one] $\r\ntwo:name [name=two] $\nthree:key [key=three] $\n"},
		{"regex dot stops at CR", map[string]string{"search": "key=.*", "replacement": "key=X", "regex": "true"},
			"replacements_made|2\nfile_size_before|28\nfile_size_after|22", 0, "key=X\r\nname=two\nkey=X\n"},
		{"regex limit inserts literally", map[string]string{"search": `(\w+)=(\w+)`, "replacement": "$2:$1", "regex": "true", "max_replacements": "2"},
			"replacements_made|2\nfile_size_before|28\nfile_size_after|23", 0, "$2:$1\r\n$2:$1\nkey=three\n"},
		{"regex anchors whole content", map[string]string{"search": "^key", "replacement": "K", "regex": "true"},
			"replacements_made|1\nfile_size_before|28\nfile_size_after|26", 0, "K=one\r\nname=two\nkey=three\n"},
		{"regex case-insensitive", map[string]string{"search": "NAME", "replacement": "n", "regex": "true", "case_sensitive": "false"},
			"replacements_made|1\nfile_size_before|28\nfile_size_after|25", 0, "key=one\r\nn=two\nkey=three\n"},
		{"identical replacement: counted, not written", map[string]string{"search": "key", "replacement": "key"},
			"replacements_made|2\nfile_size_before|28\nfile_size_after|28", 0, orig},
		{"dry run", map[string]string{"search": "key", "replacement": "KEYS", "dry_run": "true"},
			"replacements_made|2\nfile_size_before|28\nfile_size_after|30\ndry_run|true", 0, orig},
		{"dry run regex", map[string]string{"search": "e", "replacement": "", "regex": "true", "dry_run": "true", "max_replacements": "3"},
			"replacements_made|3\nfile_size_before|28\nfile_size_after|25\ndry_run|true", 0, orig},
		{"dry_run false", map[string]string{"search": "two", "replacement": "2", "dry_run": "false"},
			"replacements_made|1\nfile_size_before|28\nfile_size_after|26", 0, "key=one\r\nname=2\nkey=three\n"},
		{"nested quantifiers that expand too far", map[string]string{"search": "(.{0,100}){10}", "regex": "true"}, "error|" + msgNested, 1, orig},
		{"nested quantifiers upstream refused are fine", map[string]string{"search": "(e+)+", "replacement": "E", "regex": "true", "dry_run": "true"},
			"replacements_made|5\nfile_size_before|28\nfile_size_after|27\ndry_run|true", 0, orig},
		{"invalid regex", map[string]string{"search": "[z-a]", "regex": "true"}, "error|invalid regex: invalid character class range: `z-a`", 1, orig},
		{"lookahead", map[string]string{"search": "a(?=b)", "regex": "true"}, "error|invalid regex: invalid or unsupported Perl syntax: `(?=`", 1, orig},
		{"negative limit", map[string]string{"search": "key", "max_replacements": "-1"},
			"error|parameter max_replacements: -1 is below minimum 0", 1, orig},
		{"junk limit", map[string]string{"search": "key", "max_replacements": "1x"},
			`error|parameter max_replacements: not a valid int32: "1x"`, 1, orig},
		{"missing search", map[string]string{"search": ""}, "error|missing required parameters: path, search", 1, orig},
		{"search too long", map[string]string{"search": strings.Repeat("k", 257)}, "error|pattern too long (max 256 chars)", 1, orig},
		{"bad regex flag", map[string]string{"search": "k", "regex": "yes"}, `error|parameter regex: must be one of true, false (got "yes")`, 1, orig},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(dir, fmt.Sprintf("r%d.conf", i))
			chgWrite(t, f, orig, 0o640)
			before := chgStat(t, f)
			beforeMod := chgModTime(t, f)
			p := map[string]string{"path": f}
			for k, v := range tc.params {
				p[k] = v
			}
			got, rc := chgRun(t, h, "replace", p)
			if got != tc.want || rc != tc.rc {
				t.Errorf("got rc %d\n%s\nwant rc %d\n%s", rc, got, tc.rc, tc.want)
			}
			if c := chgRead(t, f); c != tc.content {
				t.Errorf("content %q, want %q", c, tc.content)
			}
			after := chgStat(t, f)
			if tc.content == orig && (after.Ino != before.Ino || !chgModTime(t, f).Equal(beforeMod)) {
				t.Errorf("unchanged file was rewritten (inode %d -> %d)", before.Ino, after.Ino)
			}
			if tc.content != orig && after.Ino == before.Ino {
				t.Errorf("changed file kept its inode: not written atomically")
			}
			if m := os.FileMode(after.Mode).Perm(); m != 0o640 {
				t.Errorf("mode %o, want 0640 kept", m)
			}
		})
	}
}

// TestReplaceOutputCap: a replacement whose result would pass 100 MiB is refused
// before it takes the memory, and the file is left alone.
func TestReplaceOutputCap(t *testing.T) {
	h := chgHarness(t)
	f := filepath.Join(t.TempDir(), "grow.txt")
	orig := strings.Repeat("a", 4<<20)
	chgWrite(t, f, orig, 0o644)
	got, rc := chgRun(t, h, "replace", map[string]string{"path": f, "search": "a", "replacement": strings.Repeat("b", 26)})
	want := "error|result too large (over 104857600 bytes, max 104857600)"
	if got != want || rc != 1 {
		t.Fatalf("rc %d %q, want %q", rc, got, want)
	}
	if chgRead(t, f) != orig {
		t.Fatal("file changed")
	}
}

// TestAtomicWriteObservables checks what a reader of a file changed by replace,
// delete_lines and write_content can see: a new inode, the old content intact behind a
// descriptor opened before (link count 0), permission bits kept, no temp file left,
// and an unrelated neighbour with the retired fixed temp name untouched.
func TestAtomicWriteObservables(t *testing.T) {
	h := chgHarness(t)
	for _, tc := range []struct {
		action string
		params map[string]string
		want   string
	}{
		{"replace", map[string]string{"search": "old", "replacement": "new"}, "new content\nline 2\n"},
		{"delete_lines", map[string]string{"start_line": "2", "end_line": "2"}, "old content\n"},
		{"write_content", map[string]string{"content": "new content", "overwrite": "true"}, "new content"},
	} {
		for _, mode := range []os.FileMode{0o600, 0o640, 0o755, 0o444} {
			t.Run(fmt.Sprintf("%s/%04o", tc.action, mode), func(t *testing.T) {
				dir := t.TempDir()
				f := filepath.Join(dir, "target.conf")
				const old = "old content\nline 2\n"
				chgWrite(t, f, old, mode)
				bystander := f + ".yuzu_tmp"
				chgWrite(t, bystander, "bystander", 0o600)
				reader, err := os.Open(f)
				if err != nil {
					t.Fatal(err)
				}
				defer reader.Close()
				before := chgStat(t, f)
				p := map[string]string{"path": f}
				for k, v := range tc.params {
					p[k] = v
				}
				if got, rc := chgRun(t, h, tc.action, p); rc != 0 {
					t.Fatalf("rc %d: %s", rc, got)
				}
				if c := chgRead(t, f); c != tc.want {
					t.Fatalf("content %q, want %q", c, tc.want)
				}
				after := chgStat(t, f)
				if after.Ino == before.Ino {
					t.Error("same inode: the file was rewritten in place")
				}
				if m := os.FileMode(after.Mode).Perm(); m != mode {
					t.Errorf("mode %04o, want %04o kept", m, mode)
				}
				var st unix.Stat_t
				if err := unix.Fstat(int(reader.Fd()), &st); err != nil {
					t.Fatal(err)
				}
				if st.Nlink != 0 {
					t.Errorf("old inode still has %d links", st.Nlink)
				}
				var buf bytes.Buffer
				if _, err := buf.ReadFrom(reader); err != nil || buf.String() != old {
					t.Errorf("old descriptor reads %q (%v), want the whole old content", buf.String(), err)
				}
				if tmp := chgTemps(t, dir, "target.conf"); len(tmp) > 0 {
					t.Errorf("temp files left: %v", tmp)
				}
				if chgRead(t, bystander) != "bystander" {
					t.Error("bystander changed")
				}
			})
		}
	}
}

// plantTempNames makes the crypto/rand stream deterministic and puts make(name) at
// every name the atomic writer could draw from the start of that stream (its 8 random
// bytes may start anywhere in the first 64 bytes if something else reads randomness
// first). It returns the planted paths; call SetGlobalRandom with the same seed again
// right before the write.
func plantTempNames(t *testing.T, target string, seed uint64, make func(string)) []string {
	t.Helper()
	cryptotest.SetGlobalRandom(t, seed)
	stream := make72(t)
	var planted []string
	for off := 0; off+8 <= len(stream); off++ {
		p := target + ".tmp." + hex.EncodeToString(stream[off:off+8])
		make(p)
		planted = append(planted, p)
	}
	return planted
}

func make72(t *testing.T) []byte {
	b := make([]byte, 72)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLeftoverTempPath: an entry already at the temp path the write picks is never
// followed or overwritten. A directory there (which stale-temp removal never touches)
// fails the write; a regular file there fails it too when no cross-process lock is
// held, and is removed as a stale temp file when one is.
func TestLeftoverTempPath(t *testing.T) {
	const seed = 42
	t.Run("directory fails the write", func(t *testing.T) {
		h := chgHarness(t)
		f := filepath.Join(t.TempDir(), "t.conf")
		chgWrite(t, f, "old\n", 0o644)
		planted := plantTempNames(t, f, seed, func(p string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		})
		cryptotest.SetGlobalRandom(t, seed)
		got, rc := chgRun(t, h, "replace", map[string]string{"path": f, "search": "old", "replacement": "new"})
		if rc != 1 || got != "error|"+msgWriteFailed {
			t.Fatalf("rc %d %q, want the write to fail", rc, got)
		}
		if chgRead(t, f) != "old\n" {
			t.Fatal("target changed")
		}
		for _, p := range planted {
			if fi, err := os.Lstat(p); err != nil || !fi.IsDir() {
				t.Fatalf("planted directory %s disturbed", p)
			}
		}
	})
	t.Run("regular file fails the write without the shared lock", func(t *testing.T) {
		h := sdktest.New(t, newPlugin(), sdk.Config{}) // no data directory: no shared lock
		f := filepath.Join(t.TempDir(), "t.conf")
		chgWrite(t, f, "old\n", 0o644)
		plantTempNames(t, f, seed, func(p string) { chgWrite(t, p, "leftover", 0o600) })
		cryptotest.SetGlobalRandom(t, seed)
		got, rc := chgRun(t, h, "write_content", map[string]string{"path": f, "content": "new", "overwrite": "true"})
		if rc != 1 || got != "error|"+msgWriteFailed {
			t.Fatalf("rc %d %q, want the write to fail", rc, got)
		}
		if chgRead(t, f) != "old\n" {
			t.Fatal("target changed")
		}
	})
	t.Run("symlink at the temp path is never followed", func(t *testing.T) {
		h := chgHarness(t)
		dir := t.TempDir()
		victim := filepath.Join(dir, "victim")
		chgWrite(t, victim, "victim", 0o600)
		f := filepath.Join(dir, "t.conf")
		chgWrite(t, f, "old\n", 0o644)
		planted := plantTempNames(t, f, seed, func(p string) {
			if err := os.Symlink(victim, p); err != nil {
				t.Fatal(err)
			}
		})
		cryptotest.SetGlobalRandom(t, seed)
		got, rc := chgRun(t, h, "replace", map[string]string{"path": f, "search": "old", "replacement": "new"})
		if rc != 0 {
			t.Fatalf("rc %d %q", rc, got)
		}
		if chgRead(t, f) != "new\n" || chgRead(t, victim) != "victim" {
			t.Fatal("wrong content")
		}
		for _, p := range planted {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("stale link %s kept", p)
			}
		}
	})
	t.Run("stale temp files are removed under the shared lock", func(t *testing.T) {
		h := chgHarness(t)
		dir := t.TempDir()
		f := filepath.Join(dir, "t.conf")
		chgWrite(t, f, "old\n", 0o644)
		stale := []string{f + ".tmp.0123456789abcdef", f + ".tmp.fedcba9876543210"}
		for _, p := range stale {
			chgWrite(t, p, "half-written", 0o600)
		}
		notOurs := []string{f + ".tmp.0123456789ABCDEF", f + ".tmp.0123", filepath.Join(dir, "other.conf.tmp.0123456789abcdef")}
		for _, p := range notOurs {
			chgWrite(t, p, "keep", 0o600)
		}
		if got, rc := chgRun(t, h, "replace", map[string]string{"path": f, "search": "old", "replacement": "new"}); rc != 0 {
			t.Fatalf("rc %d %q", rc, got)
		}
		if tmp := chgTemps(t, dir, "t.conf"); len(tmp) != 0 {
			t.Errorf("stale temps kept: %v", tmp)
		}
		for _, p := range notOurs {
			if chgRead(t, p) != "keep" {
				t.Errorf("%s removed", p)
			}
		}
	})
}

func TestWriteContent(t *testing.T) {
	h := chgHarness(t)
	umask := chgUmask(t)
	dir := t.TempDir()
	outside := t.TempDir()
	existing := filepath.Join(dir, "existing.txt")
	linkOut := filepath.Join(dir, "link_out")
	if err := os.Symlink(filepath.Join(outside, "target.txt"), linkOut); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		params map[string]string
		want   string
		rc     int
		check  func(t *testing.T)
	}{
		{"create new", map[string]string{"path": filepath.Join(dir, "new.txt"), "content": "hello", "create": "true"},
			"status|ok\nbytes_written|5\npath|" + filepath.Join(dir, "new.txt"), 0, func(t *testing.T) {
				if chgRead(t, filepath.Join(dir, "new.txt")) != "hello" {
					t.Error("content")
				}
				if m := chgStat(t, filepath.Join(dir, "new.txt")).Mode & 0o777; os.FileMode(m) != 0o666&^umask {
					t.Errorf("mode %o, want %o", m, 0o666&^umask)
				}
			}},
		{"parent through a missing directory", map[string]string{"path": dir + "/./sub/../raw.txt", "create": "true"},
			"error|" + msgNotAccessible, 1, nil},
		{"create with dot segments", map[string]string{"path": dir + "//./raw.txt", "content": "", "create": "true"},
			"status|ok\nbytes_written|0\npath|" + dir + "//./raw.txt", 0, func(t *testing.T) {
				if chgRead(t, filepath.Join(dir, "raw.txt")) != "" {
					t.Error("content")
				}
			}},
		{"missing content writes an empty file", map[string]string{"path": filepath.Join(dir, "empty.txt"), "create": "true"},
			"status|ok\nbytes_written|0\npath|" + filepath.Join(dir, "empty.txt"), 0, nil},
		{"new file without create", map[string]string{"path": filepath.Join(dir, "no.txt"), "content": "x"},
			"error|file does not exist and create=false", 1, func(t *testing.T) {
				if _, err := os.Lstat(filepath.Join(dir, "no.txt")); err == nil {
					t.Error("created")
				}
			}},
		{"existing without overwrite", map[string]string{"path": existing, "content": "x", "create": "true"},
			"error|file exists and overwrite=false", 1, func(t *testing.T) {
				if chgRead(t, existing) != "existing\n" {
					t.Error("changed")
				}
			}},
		{"overwrite existing", map[string]string{"path": existing, "content": "replaced", "overwrite": "true"},
			"status|ok\nbytes_written|8\npath|" + existing, 0, func(t *testing.T) {
				if chgRead(t, existing) != "replaced" {
					t.Error("content")
				}
				if m := chgStat(t, existing).Mode & 0o777; m != 0o604 {
					t.Errorf("mode %o, want 0604 kept", m)
				}
			}},
		{"overwrite with the same content writes nothing", map[string]string{"path": existing, "content": "existing\n", "overwrite": "true"},
			"status|ok\nbytes_written|0\npath|" + existing, 0, nil},
		{"overwrite through a link reports the canonical path", map[string]string{"path": filepath.Join(dir, "link_in"), "content": "via link", "overwrite": "true"},
			"status|ok\nbytes_written|8\npath|" + existing, 0, func(t *testing.T) {
				if chgRead(t, existing) != "via link" {
					t.Error("content")
				}
				if fi, err := os.Lstat(filepath.Join(dir, "link_in")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
					t.Error("link replaced")
				}
			}},
		{"dangling link is not written through", map[string]string{"path": linkOut, "content": "x", "create": "true"},
			"error|failed to create file", 1, func(t *testing.T) {
				if _, err := os.Lstat(filepath.Join(outside, "target.txt")); err == nil {
					t.Error("link target created")
				}
			}},
		{"dangling link with base_dir", map[string]string{"path": linkOut, "content": "x", "create": "true", "base_dir": dir},
			"error|failed to create file", 1, nil},
		{"directory", map[string]string{"path": dir, "content": "x", "overwrite": "true"}, "error|" + msgNotRegular, 1, nil},
		{"missing parent", map[string]string{"path": filepath.Join(dir, "nope", "x.txt"), "create": "true"}, "error|" + msgNotAccessible, 1, nil},
		{"bare name", map[string]string{"path": "bare.txt", "create": "true"}, "error|" + msgNotAccessible, 1, nil},
		{"new file outside base_dir", map[string]string{"path": filepath.Join(outside, "x.txt"), "create": "true", "base_dir": dir},
			"error|" + msgNotAccessible, 1, nil},
		{"missing path", map[string]string{"content": "x"}, "error|missing required parameter: path", 1, nil},
		{"bad create flag", map[string]string{"path": filepath.Join(dir, "b.txt"), "create": "TRUE"},
			`error|parameter create: must be one of true, false (got "TRUE")`, 1, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			chgWrite(t, existing, "existing\n", 0o604)
			_ = os.Remove(filepath.Join(dir, "link_in"))
			if err := os.Symlink("existing.txt", filepath.Join(dir, "link_in")); err != nil {
				t.Fatal(err)
			}
			got, rc := chgRun(t, h, "write_content", tc.params)
			if got != tc.want || rc != tc.rc {
				t.Errorf("got rc %d\n%s\nwant rc %d\n%s", rc, got, tc.rc, tc.want)
			}
			if tc.check != nil {
				tc.check(t)
			}
		})
	}
}

func TestAppend(t *testing.T) {
	h := chgHarness(t)
	dir := t.TempDir()
	tests := []struct {
		name    string
		initial string
		params  map[string]string
		want    string // rows after status|ok
		content string
	}{
		{"adds the missing newline", "abc", map[string]string{"content": "def"}, "bytes_appended|4\ntotal_size|7", "abc\ndef"},
		{"no newline needed", "abc\n", map[string]string{"content": "def"}, "bytes_appended|3\ntotal_size|7", "abc\ndef"},
		{"empty file gets no newline", "", map[string]string{"content": "def"}, "bytes_appended|3\ntotal_size|3", "def"},
		{"newline false", "abc", map[string]string{"content": "def", "newline": "false"}, "bytes_appended|3\ntotal_size|6", "abcdef"},
		{"empty content still ends the line", "abc", map[string]string{}, "bytes_appended|1\ntotal_size|4", "abc\n"},
		{"nothing to append", "abc\n", map[string]string{"content": ""}, "bytes_appended|0\ntotal_size|4", "abc\n"},
		{"CRLF file ends in LF", "a\r\n", map[string]string{"content": "b\r\n"}, "bytes_appended|3\ntotal_size|6", "a\r\nb\r\n"},
		{"content with its own newlines", "x", map[string]string{"content": "1\n2\n"}, "bytes_appended|5\ntotal_size|6", "x\n1\n2\n"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(dir, fmt.Sprintf("a%d.log", i))
			chgWrite(t, f, tc.initial, 0o640)
			before := chgStat(t, f)
			p := map[string]string{"path": f}
			for k, v := range tc.params {
				p[k] = v
			}
			got, rc := chgRun(t, h, "append", p)
			if rc != 0 || got != "status|ok\n"+tc.want {
				t.Errorf("rc %d\n%s\nwant\nstatus|ok\n%s", rc, got, tc.want)
			}
			if c := chgRead(t, f); c != tc.content {
				t.Errorf("content %q, want %q", c, tc.content)
			}
			fi, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(got, "total_size|"+strconv.FormatInt(fi.Size(), 10)) {
				t.Errorf("total_size is not the real size %d", fi.Size())
			}
			if after := chgStat(t, f); after.Ino != before.Ino || os.FileMode(after.Mode).Perm() != 0o640 {
				t.Error("append replaced the file or changed its mode")
			}
		})
	}
	t.Run("errors", func(t *testing.T) {
		fifo := filepath.Join(dir, "fifo")
		if err := unix.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			params map[string]string
			want   string
		}{
			{map[string]string{"content": "x"}, "error|missing required parameter: path"},
			{map[string]string{"path": filepath.Join(dir, "missing"), "content": "x"}, "error|" + msgNotAccessible},
			{map[string]string{"path": dir, "content": "x"}, "error|" + msgNotRegular},
			{map[string]string{"path": fifo, "content": "x"}, "error|" + msgNotRegular},
			{map[string]string{"path": "/dev/null", "content": "x"}, "error|" + msgNotRegular},
			{map[string]string{"path": filepath.Join(dir, "a0.log"), "content": "x", "newline": "1"},
				`error|parameter newline: must be one of true, false (got "1")`},
		} {
			got, rc := chgRun(t, h, "append", tc.params)
			if rc != 1 || got != tc.want {
				t.Errorf("%v: rc %d %q, want %q", tc.params, rc, got, tc.want)
			}
		}
	})
}

func TestDeleteLines(t *testing.T) {
	h := chgHarness(t)
	dir := t.TempDir()
	const five = "1\n2\r\n3\n4\n5"
	tests := []struct {
		name       string
		initial    string
		start, end string
		want       string
		rc         int
		content    string
	}{
		{"first line", five, "1", "1", "lines_deleted|1\ntotal_lines_before|5\ntotal_lines_after|4", 0, "2\r\n3\n4\n5\n"},
		{"middle keeps CR", five, "3", "4", "lines_deleted|2\ntotal_lines_before|5\ntotal_lines_after|3", 0, "1\n2\r\n5\n"},
		{"last line without newline", five, "5", "5", "lines_deleted|1\ntotal_lines_before|5\ntotal_lines_after|4", 0, "1\n2\r\n3\n4\n"},
		{"end past the end is clamped", five, "4", "99", "lines_deleted|2\ntotal_lines_before|5\ntotal_lines_after|3", 0, "1\n2\r\n3\n"},
		{"everything", five, "1", "5", "lines_deleted|5\ntotal_lines_before|5\ntotal_lines_after|0", 0, ""},
		{"everything with trailing newline", "a\nb\n", "1", "2", "lines_deleted|2\ntotal_lines_before|2\ntotal_lines_after|0", 0, ""},
		{"empty lines count", "a\n\n\nb\n", "2", "3", "lines_deleted|2\ntotal_lines_before|4\ntotal_lines_after|2", 0, "a\nb\n"},
		{"single newline is one line", "\n", "1", "1", "lines_deleted|1\ntotal_lines_before|1\ntotal_lines_after|0", 0, ""},
		{"max int32 end", five, "2", "2147483647", "lines_deleted|4\ntotal_lines_before|5\ntotal_lines_after|1", 0, "1\n"},
		{"start beyond end", five, "6", "6", "error|start_line beyond end of file", 1, five},
		{"empty file", "", "1", "1", "error|start_line beyond end of file", 1, ""},
		{"end before start", five, "3", "2", "error|" + msgBadRange, 1, five},
		{"start 0", five, "0", "2", "error|" + msgBadRange, 1, five},
		{"negative end", five, "1", "-1", "error|" + msgBadRange, 1, five},
		{"junk start", five, "1x", "2", `error|parameter start_line: not a valid int32: "1x"`, 1, five},
		{"space before number", five, " 1", "2", `error|parameter start_line: not a valid int32: " 1"`, 1, five},
		{"out of int32", five, "1", "99999999999", `error|parameter end_line: "99999999999" is out of range for int32`, 1, five},
		{"missing start", five, "", "2", "error|missing required parameters: path, start_line, end_line", 1, five},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(dir, fmt.Sprintf("d%d.txt", i))
			chgWrite(t, f, tc.initial, 0o600)
			got, rc := chgRun(t, h, "delete_lines", map[string]string{"path": f, "start_line": tc.start, "end_line": tc.end})
			if got != tc.want || rc != tc.rc {
				t.Errorf("got rc %d\n%s\nwant rc %d\n%s", rc, got, tc.rc, tc.want)
			}
			if c := chgRead(t, f); c != tc.content {
				t.Errorf("content %q, want %q", c, tc.content)
			}
			if m := chgStat(t, f).Mode & 0o777; m != 0o600 {
				t.Errorf("mode %o", m)
			}
		})
	}
}

func TestDeleteLineRange(t *testing.T) {
	for _, tc := range []struct {
		src        string
		start, end int
		dst        string
		deleted    int
		total      int
		ok         bool
	}{
		{"a", 1, 1, "", 1, 1, true},
		{"a\nb", 1, 1, "b\n", 1, 2, true},
		{"a\nb", 2, 2, "a\n", 1, 2, true},
		{"a\nb\n", 2, 5, "a\n", 1, 2, true},
		{"a\nb\n", 3, 3, "", 0, 2, false},
		{"", 1, 1, "", 0, 0, false},
		{"\n\n", 2, 2, "\n", 1, 2, true},
	} {
		dst, deleted, total, ok := deleteLineRange([]byte(tc.src), tc.start, tc.end)
		if string(dst) != tc.dst || deleted != tc.deleted || total != tc.total || ok != tc.ok {
			t.Errorf("%q %d-%d: got %q %d %d %v", tc.src, tc.start, tc.end, dst, deleted, total, ok)
		}
	}
}

// TestConcurrentChanges: changes of one file running at the same time in one plugin
// are serialised by the write lock, so none is lost: each replace reads what the
// previous one wrote, and appends wait for a replace in progress.
func TestConcurrentChanges(t *testing.T) {
	h := chgHarness(t)
	f := filepath.Join(t.TempDir(), "shared.conf")
	const n = 16
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "key%02d=old\n", i)
	}
	chgWrite(t, f, b.String(), 0o644)
	var wg sync.WaitGroup
	errs := make(chan string, 2*n)
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			o := h.Run("replace", map[string]string{"path": f, "search": fmt.Sprintf("key%02d=old", i), "replacement": fmt.Sprintf("key%02d=new", i)})
			if o.Result.Code != 0 {
				errs <- o.String()
			}
		}()
		go func() {
			defer wg.Done()
			o := h.Run("append", map[string]string{"path": f, "content": fmt.Sprintf("appended%02d", i)})
			if o.Result.Code != 0 {
				errs <- o.String()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	c := chgRead(t, f)
	for i := range n {
		if !strings.Contains(c, fmt.Sprintf("key%02d=new\n", i)) || !strings.Contains(c, fmt.Sprintf("appended%02d\n", i)) &&
			!strings.HasSuffix(c, fmt.Sprintf("appended%02d", i)) {
			t.Errorf("change %d lost:\n%s", i, c)
		}
	}
	if strings.Contains(c, "=old") {
		t.Errorf("a replace was lost:\n%s", c)
	}
}

// TestSwapBeforeCommit swaps the target at the worst moment, after it was read and
// the new content computed, just before the write: for a link to a file outside
// base_dir, for another file, and for a parent directory moved outside base_dir. Each
// change must be refused, and nothing outside may change.
func TestSwapBeforeCommit(t *testing.T) {
	h := chgHarness(t)
	swaps := []struct {
		name string
		swap func(t *testing.T, target, outsideFile, outsideDir string)
	}{
		{"target becomes a link outside", func(t *testing.T, target, outsideFile, _ string) {
			if err := os.Rename(target, target+".moved"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outsideFile, target); err != nil {
				t.Fatal(err)
			}
		}},
		{"target replaced by another file", func(t *testing.T, target, _, _ string) {
			if err := os.Rename(target, target+".moved"); err != nil {
				t.Fatal(err)
			}
			chgWrite(t, target, "someone else's\n", 0o644)
		}},
		{"parent moved outside base_dir", func(t *testing.T, target, _, outsideDir string) {
			if err := os.Rename(filepath.Dir(target), filepath.Join(outsideDir, "moved")); err != nil {
				t.Fatal(err)
			}
		}},
		{"parent swapped for a link outside", func(t *testing.T, target, _, outsideDir string) {
			sub := filepath.Dir(target)
			if err := os.Rename(sub, sub+".moved"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outsideDir, sub); err != nil {
				t.Fatal(err)
			}
		}},
	}
	actions := []struct {
		name   string
		params map[string]string
	}{
		{"replace", map[string]string{"search": "old", "replacement": "new"}},
		{"delete_lines", map[string]string{"start_line": "1", "end_line": "1"}},
		{"write_content", map[string]string{"content": "new\n", "overwrite": "true"}},
		{"append", map[string]string{"content": "new"}},
	}
	for _, sw := range swaps {
		for _, a := range actions {
			t.Run(sw.name+"/"+a.name, func(t *testing.T) {
				base := t.TempDir()
				outsideDir := t.TempDir()
				outsideFile := filepath.Join(outsideDir, "target.conf")
				chgWrite(t, outsideFile, "old\nSECRET\n", 0o600)
				sub := filepath.Join(base, "sub")
				if err := os.Mkdir(sub, 0o755); err != nil {
					t.Fatal(err)
				}
				target := filepath.Join(sub, "target.conf")
				chgWrite(t, target, "old\nline\n", 0o644)
				testHook = func(stage, _ string) {
					if stage == "commit" {
						sw.swap(t, target, outsideFile, outsideDir)
					}
				}
				defer func() { testHook = nil }()
				p := map[string]string{"path": target, "base_dir": base}
				for k, v := range a.params {
					p[k] = v
				}
				got, rc := chgRun(t, h, a.name, p)
				if rc != 1 || got != "error|"+msgChanged {
					t.Errorf("rc %d %q, want the change refused", rc, got)
				}
				if chgRead(t, outsideFile) != "old\nSECRET\n" {
					t.Error("ESCAPE: the file outside base_dir changed")
				}
				ents, _ := os.ReadDir(outsideDir)
				for _, e := range ents {
					if e.Name() != "target.conf" && e.Name() != "moved" {
						t.Errorf("ESCAPE: %s created outside base_dir", e.Name())
					}
				}
			})
		}
	}
}

// TestCreateMovedOutside: a new file whose directory is moved out of base_dir right
// after the file was created is removed again and nothing is written into it.
func TestCreateMovedOutside(t *testing.T) {
	h := chgHarness(t)
	base := t.TempDir()
	outside := t.TempDir()
	sub := filepath.Join(base, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	testHook = func(stage, _ string) {
		if stage == "commit" {
			if err := os.Rename(sub, filepath.Join(outside, "moved")); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { testHook = nil }()
	got, rc := chgRun(t, h, "write_content", map[string]string{"path": filepath.Join(sub, "new.txt"), "content": "PWNED",
		"create": "true", "base_dir": base})
	if rc != 1 || got != "error|"+msgChanged {
		t.Errorf("rc %d %q", rc, got)
	}
	if ents, _ := os.ReadDir(filepath.Join(outside, "moved")); len(ents) != 0 {
		t.Errorf("left behind outside base_dir: %v", ents)
	}
}

// TestWriteLockAcrossProcesses: the lock file is taken with flock, so a holder in
// another process (simulated by a second open file description) makes a change wait
// until it lets go, and a command whose deadline passes while waiting answers so
// without touching the file.
func TestWriteLockAcrossProcesses(t *testing.T) {
	data := t.TempDir()
	h := sdktest.New(t, newPlugin(), sdk.Config{DataDir: data})
	f := filepath.Join(t.TempDir(), "locked.conf")
	chgWrite(t, f, "old\n", 0o644)
	d, err := pinDir("", filepath.Dir(f), true)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS == "linux" && d.viaFD == "" {
		t.Error("pinned directory is not reached through /proc/self/fd on Linux")
	}
	bucket := int(d.key() % lockBuckets)
	d.close()
	lf, err := openLockFile(data, bucket)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if ok, err := filelock.TryLock(lf); !ok || err != nil {
		t.Fatalf("lock: %v %v", ok, err)
	}
	fi, err := os.Stat(filepath.Join(data, "filesystem", "write-locks"))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("lock directory: %v %v", fi, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	o, _ := h.RunContext(ctx, "replace", map[string]string{"path": f, "search": "old", "replacement": "new"})
	if o.Result.Code != 1 || !slices.Equal(o.Rows, []string{"error|timed out before the file was changed"}) {
		t.Errorf("while locked: %s", o)
	}
	done := make(chan sdktest.Outcome)
	go func() {
		done <- h.Run("replace", map[string]string{"path": f, "search": "old", "replacement": "new"})
	}()
	time.Sleep(100 * time.Millisecond)
	if chgRead(t, f) != "old\n" {
		t.Fatal("changed while the lock was held")
	}
	_ = filelock.Unlock(lf)
	if o := <-done; o.Result.Code != 0 || chgRead(t, f) != "new\n" {
		t.Fatalf("after unlock: %s", o)
	}
}

// TestChangeAttackCorpus runs every hostile input this group's actions should meet
// against a sandbox: a base directory with links pointing in and out, a sibling whose
// name starts with the base's, and files outside holding SECRET. An escape is any
// change below the outside directories, any file created there, or any row showing
// SECRET. The count of cases and escapes is logged; escapes must be 0.
func TestChangeAttackCorpus(t *testing.T) {
	h := chgHarness(t)
	root := t.TempDir()
	base := filepath.Join(root, "base")
	outside := filepath.Join(root, "outside")
	sibling := base + "backup" // shares base's name as a string prefix
	for _, d := range []string{base, filepath.Join(base, "sub"), outside, sibling} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(outside, "secret.txt")
	for _, link := range [][2]string{
		{"file.txt", filepath.Join(base, "link_in")},
		{secret, filepath.Join(base, "link_out")},
		{outside, filepath.Join(base, "dirlink_out")},
		{filepath.Join(outside, "created.txt"), filepath.Join(base, "dangling_out")},
	} {
		if err := os.Symlink(link[0], link[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mkfifo(filepath.Join(base, "fifo"), 0o666); err != nil {
		t.Fatal(err)
	}
	reset := func(t *testing.T) {
		chgWrite(t, filepath.Join(base, "file.txt"), "inside\nline 2\n", 0o644)
		chgWrite(t, secret, "SECRET\n", 0o600)
		chgWrite(t, filepath.Join(sibling, "secret.txt"), "SECRET sibling\n", 0o600)
		for _, d := range []string{outside, sibling} {
			ents, _ := os.ReadDir(d)
			for _, e := range ents {
				if e.Name() != "secret.txt" && e.Name() != "moved" {
					os.RemoveAll(filepath.Join(d, e.Name()))
				}
			}
		}
	}
	reset(t)
	held, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	procFD := "/proc/self/fd/" + strconv.Itoa(int(held.Fd()))

	// snapshot records everything below the outside directories.
	snapshot := func() string {
		var b strings.Builder
		for _, d := range []string{outside, sibling} {
			_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
				if err != nil {
					return nil
				}
				if p == filepath.Join(outside, "moved") {
					// Put there by a swap of the test itself; its file is checked apart.
					return filepath.SkipDir
				}
				fi, _ := e.Info()
				fmt.Fprintf(&b, "%s %v", p, fi.Mode())
				if fi.Mode().IsRegular() {
					c, _ := os.ReadFile(p)
					fmt.Fprintf(&b, " %q", c)
				}
				b.WriteByte('\n')
				return nil
			})
		}
		return b.String()
	}

	type attack struct {
		name   string
		action string
		params map[string]string
		want   string // the exact error row expected; "" accepts any error row
		swap   func(t *testing.T, stage string)
	}
	var cases []attack

	// Paths that must not reach anything outside base.
	pathAttacks := []struct{ name, path, base string }{
		{"dot-dot traversal", base + "/../outside/secret.txt", base},
		{"deep traversal", base + "/sub/../../outside/secret.txt", base},
		{"absolute path outside", secret, base},
		{"link pointing outside", filepath.Join(base, "link_out"), base},
		{"through a directory link", filepath.Join(base, "dirlink_out", "secret.txt"), base},
		{"dot-dot after a directory link", filepath.Join(base, "dirlink_out") + "/../outside/secret.txt", base},
		{"/proc/self/root", "/proc/self/root" + secret, base},
		{"/proc/self/fd of an open outside file", procFD, base},
		{"prefix sibling", filepath.Join(sibling, "secret.txt"), base},
		{"prefix sibling, base with trailing slash", filepath.Join(sibling, "secret.txt"), base + "/"},
		{"prefix sibling by dot-dot", base + "/../basebackup/secret.txt", base},
		{"NUL byte in path", filepath.Join(base, "file.txt") + "\x00/../../outside/secret.txt", base},
		{"NUL byte in base_dir", secret, base + "\x00"},
		{"base_dir that does not exist", secret, filepath.Join(root, "nope")},
		{"relative path", "outside/secret.txt", base},
		{"over-long path", base + "/" + strings.Repeat("a/", 2100) + "x", base},
		{"over-long base_dir", secret, "/" + strings.Repeat("b", 4096)},
		{"FIFO inside base", filepath.Join(base, "fifo"), base},
		{"device", "/dev/zero", "/dev"},
	}
	changeParams := map[string]map[string]string{
		"search":        {"pattern": "SECRET"},
		"replace":       {"search": "SECRET", "replacement": "PWNED"},
		"write_content": {"content": "PWNED", "overwrite": "true", "create": "true"},
		"append":        {"content": "PWNED"},
		"delete_lines":  {"start_line": "1", "end_line": "1"},
	}
	for _, action := range []string{"search", "replace", "write_content", "append", "delete_lines"} {
		for _, a := range pathAttacks {
			p := map[string]string{"path": a.path, "base_dir": a.base}
			for k, v := range changeParams[action] {
				p[k] = v
			}
			cases = append(cases, attack{name: action + "/" + a.name, action: action, params: p})
		}
	}
	// New files.
	for _, a := range []struct{ name, path, base string }{
		{"create by traversal", base + "/../outside/new.txt", base},
		{"create through a directory link", filepath.Join(base, "dirlink_out", "new.txt"), base},
		{"create through /proc/self/root", "/proc/self/root" + outside + "/new.txt", base},
		{"create at a dangling link", filepath.Join(base, "dangling_out"), base},
		{"create at a dangling link without base_dir", filepath.Join(base, "dangling_out"), ""},
		{"create in the prefix sibling", filepath.Join(sibling, "new.txt"), base},
		{"create named dot-dot", base + "/..", base},
		{"create with NUL", filepath.Join(base, "new.txt\x00x"), base},
	} {
		cases = append(cases, attack{name: "write_content/" + a.name, action: "write_content",
			params: map[string]string{"path": a.path, "base_dir": a.base, "content": "PWNED", "create": "true"}})
	}
	// Patterns and integers.
	badRegexes := []string{"(", "[", `a\`, "*", "(?P<n", "[z-a]", `(a)\1`, "(?=x)", "(?<=x)x", "(?:a{500}){3}", "(a{1000}){1000}",
		"(.{0,100}){10}", "x{2,1}", `\p{Nope}`, strings.Repeat("(", 257)}
	for _, re := range badRegexes {
		cases = append(cases,
			attack{name: "search/regex " + re[:min(len(re), 12)], action: "search",
				params: map[string]string{"path": filepath.Join(base, "file.txt"), "pattern": re, "regex": "true"}},
			attack{name: "replace/regex " + re[:min(len(re), 12)], action: "replace",
				params: map[string]string{"path": filepath.Join(base, "file.txt"), "search": re, "regex": "true"}})
	}
	for _, n := range []string{"12abc", " 12", "0x10", "1e3", "99999999999", "", "+-1", "1.5"} {
		cases = append(cases,
			attack{name: "search/max_matches " + strconv.Quote(n), action: "search",
				params: map[string]string{"path": filepath.Join(base, "file.txt"), "pattern": "x", "max_matches": n}},
			attack{name: "replace/max_replacements " + strconv.Quote(n), action: "replace",
				params: map[string]string{"path": filepath.Join(base, "file.txt"), "search": "inside", "max_replacements": n}},
			attack{name: "delete_lines/start_line " + strconv.Quote(n), action: "delete_lines",
				params: map[string]string{"path": filepath.Join(base, "file.txt"), "start_line": n, "end_line": "1"}})
	}
	cases = append(cases,
		attack{name: "replace/max_replacements -1", action: "replace",
			params: map[string]string{"path": filepath.Join(base, "file.txt"), "search": "inside", "max_replacements": "-1"}},
		attack{name: "delete_lines/end before start", action: "delete_lines",
			params: map[string]string{"path": filepath.Join(base, "file.txt"), "start_line": "2", "end_line": "1"}, want: "error|" + msgBadRange},
		attack{name: "search/over-long pattern", action: "search",
			params: map[string]string{"path": filepath.Join(base, "file.txt"), "pattern": strings.Repeat("x", 257)}},
		attack{name: "replace/over-long search", action: "replace",
			params: map[string]string{"path": filepath.Join(base, "file.txt"), "search": strings.Repeat("x", 257)}},
	)
	// Temporary files: nothing may land outside the directory asked for.
	for _, a := range []struct {
		name   string
		params map[string]string
	}{
		{"prefix climbing out", map[string]string{"directory": base, "prefix": "../outside/x"}},
		{"prefix absolute", map[string]string{"directory": base, "prefix": outside + "/x"}},
		{"suffix climbing out", map[string]string{"directory": base, "suffix": "/../../outside/x"}},
		{"prefix with NUL", map[string]string{"directory": base, "prefix": "a\x00/../x"}},
		{"directory with NUL", map[string]string{"directory": outside + "\x00" + base}},
		{"directory missing", map[string]string{"directory": filepath.Join(base, "nope")}},
		{"directory is a file", map[string]string{"directory": filepath.Join(base, "file.txt")}},
		{"directory is a FIFO", map[string]string{"directory": filepath.Join(base, "fifo")}},
		{"over-long prefix", map[string]string{"directory": base, "prefix": strings.Repeat("p", 65)}},
		{"over-long directory", map[string]string{"directory": "/" + strings.Repeat("d", 4096)}},
	} {
		for _, action := range []string{"create_temp", "create_temp_dir"} {
			if _, ok := a.params["suffix"]; ok && action == "create_temp_dir" {
				continue // create_temp_dir takes no suffix
			}
			cases = append(cases, attack{name: action + "/" + a.name, action: action, params: a.params})
		}
	}
	// A target swapped between validation and use, for every change action: just before
	// the open (for a link outside) and just before the write (link, other file, parent
	// moved out, parent swapped for a link).
	target := filepath.Join(base, "sub", "target.conf")
	swapToLink := func(t *testing.T) {
		os.Rename(target, target+".moved")
		if err := os.Symlink(secret, target); err != nil {
			t.Fatal(err)
		}
	}
	swaps := []struct {
		name  string
		stage string
		do    func(t *testing.T)
	}{
		{"swapped for an outside link before open", "open", swapToLink},
		{"swapped for an outside link before write", "commit", swapToLink},
		{"parent swapped for an outside link before open", "open", func(t *testing.T) {
			sub := filepath.Join(base, "sub")
			os.Rename(sub, sub+".moved")
			if err := os.Symlink(outside, sub); err != nil {
				t.Fatal(err)
			}
		}},
		{"parent moved outside before write", "commit", func(t *testing.T) {
			if err := os.Rename(filepath.Join(base, "sub"), filepath.Join(outside, "moved")); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, action := range []string{"search", "replace", "write_content", "append", "delete_lines"} {
		for _, sw := range swaps {
			if action == "search" && sw.stage == "commit" {
				continue // search writes nothing
			}
			p := map[string]string{"path": target, "base_dir": base}
			for k, v := range changeParams[action] {
				p[k] = v
			}
			if action == "replace" {
				p["search"] = "target"
			}
			cases = append(cases, attack{name: action + "/" + sw.name, action: action, params: p,
				swap: func(t *testing.T, stage string) {
					if stage == sw.stage {
						sw.do(t)
					}
				}})
		}
	}

	newFile := filepath.Join(base, "sub", "new.txt")
	createSwaps := []struct {
		name  string
		stage string
		do    func(t *testing.T)
	}{
		{"link to outside planted at the name before create", "open", func(t *testing.T) {
			if err := os.Symlink(filepath.Join(outside, "created.txt"), newFile); err != nil {
				t.Fatal(err)
			}
		}},
		swaps[2], // parent swapped for an outside link before open
		swaps[3], // parent moved outside before write
	}
	for _, sw := range createSwaps {
		cases = append(cases, attack{name: "write_content/create, " + sw.name, action: "write_content",
			params: map[string]string{"path": newFile, "base_dir": base, "content": "PWNED", "create": "true"},
			swap: func(t *testing.T, stage string) {
				if stage == sw.stage {
					sw.do(t)
				}
			}})
	}

	escapes := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reset(t)
			sub := filepath.Join(base, "sub")
			for _, p := range []string{sub, sub + ".moved", filepath.Join(outside, "moved")} {
				if fi, err := os.Lstat(p); err == nil {
					if fi.IsDir() {
						os.RemoveAll(p)
					} else {
						os.Remove(p)
					}
				}
			}
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			chgWrite(t, target, "target\nline 2\n", 0o644)
			before := snapshot()
			if c.swap != nil {
				testHook = func(stage, _ string) { c.swap(t, stage) }
				defer func() { testHook = nil }()
			}
			done := make(chan sdktest.Outcome, 1)
			go func() { done <- h.Run(c.action, c.params) }()
			var o sdktest.Outcome
			select {
			case o = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("hang")
			}
			testHook = nil
			got := strings.Join(o.Rows, "\n")
			escaped := snapshot() != before || strings.Contains(got, "SECRET")
			if c, err := os.ReadFile(filepath.Join(outside, "moved", "target.conf")); err == nil && string(c) != "target\nline 2\n" {
				escaped = true
			}
			if escaped {
				escapes++
				t.Errorf("ESCAPE: %s\nbefore:\n%s\nafter:\n%s", got, before, snapshot())
			}
			if o.Result.Code != 1 || len(o.Rows) == 0 || !strings.HasPrefix(o.Rows[len(o.Rows)-1], "error|") {
				t.Errorf("not refused: %s", o)
			}
			if os.Getenv("CHG_CORPUS_SHOW") != "" {
				t.Logf("%q", got)
			}
			if c.want != "" && got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
	t.Logf("attack corpus: %d cases, %d escapes", len(cases), escapes)
	if escapes != 0 {
		t.Errorf("%d escapes", escapes)
	}
}
