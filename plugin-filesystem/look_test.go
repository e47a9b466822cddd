//go:build linux

package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/sdktest"
)

// Trailers of the capture format.
const (
	lookOK   = "[result_status] UNDECLARED / UNKNOWN\n"
	lookFail = lookOK + "[rc] 1\n"
)

func lookHarness(t *testing.T) *sdktest.Harness {
	t.Helper()
	return sdktest.New(t, newPlugin(), sdk.Config{DataDir: t.TempDir()})
}

func lookRun(t *testing.T, h *sdktest.Harness, action string, params map[string]string) string {
	t.Helper()
	return h.Run(action, params).String()
}

// lookDir returns a canonical temporary directory.
func lookDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func lookWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func lookMkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

func lookSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func lookFIFO(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

// lookSparse makes a file of size bytes whose content is head followed by zeros,
// without writing the zeros.
func lookSparse(t testing.TB, path, head string, size int64) {
	t.Helper()
	if err := os.WriteFile(path, []byte(head), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

func kv(pairs ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return m
}

func TestLookDefinitions(t *testing.T) {
	sdktest.CheckDefinitions(t, newPlugin())
}

func TestExists(t *testing.T) {
	d := lookDir(t)
	lookWrite(t, filepath.Join(d, "base", "f.txt"), "hello")
	lookMkdir(t, filepath.Join(d, "base", "sub"))
	lookFIFO(t, filepath.Join(d, "base", "fifo"))
	lookSymlink(t, "f.txt", filepath.Join(d, "base", "link"))
	lookSymlink(t, "nowhere", filepath.Join(d, "base", "dangling"))
	lookWrite(t, filepath.Join(d, "out.txt"), "outside")
	lookSymlink(t, filepath.Join(d, "out.txt"), filepath.Join(d, "base", "escape"))
	base := filepath.Join(d, "base")
	h := lookHarness(t)
	for _, c := range []struct {
		name   string
		params map[string]string
		want   string
	}{
		{"file", kv("path", base+"/f.txt"), "exists|true\ntype|file\nsize|5\n" + lookOK},
		{"directory", kv("path", base+"/sub"), "exists|true\ntype|directory\nsize|0\n" + lookOK},
		{"fifo is other", kv("path", base+"/fifo"), "exists|true\ntype|other\nsize|0\n" + lookOK},
		{"link reads as its target", kv("path", base+"/link"), "exists|true\ntype|file\nsize|5\n" + lookOK},
		{"dangling link does not exist", kv("path", base+"/dangling"), "exists|false\n" + lookOK},
		{"missing", kv("path", base+"/nope"), "exists|false\n" + lookOK},
		{"missing parent, no base", kv("path", d+"/no/such/file"), "exists|false\n" + lookOK},
		{"bare name, no base", kv("path", "no-such-file-here"), "exists|false\n" + lookOK},
		{"inside base", kv("path", base+"/f.txt", "base_dir", base), "exists|true\ntype|file\nsize|5\n" + lookOK},
		{"missing inside base", kv("path", base+"/nope", "base_dir", base), "exists|false\n" + lookOK},
		{"missing parent with base", kv("path", base+"/no/such", "base_dir", base),
			"error|path is outside allowed base directory\n" + lookFail},
		{"outside base", kv("path", d+"/out.txt", "base_dir", base),
			"error|path is outside allowed base directory\n" + lookFail},
		{"link out of base", kv("path", base+"/escape", "base_dir", base),
			"error|path is outside allowed base directory\n" + lookFail},
		{"missing path", kv(), "error|missing required parameter: path\n" + lookFail},
		{"empty path", kv("path", ""), "error|missing required parameter: path\n" + lookFail},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := lookRun(t, h, "exists", c.params); got != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

func TestListDir(t *testing.T) {
	d := lookDir(t)
	base := filepath.Join(d, "base")
	lookWrite(t, base+"/a.txt", "12345")
	lookWrite(t, base+"/.hidden", "xy")
	lookMkdir(t, base+"/sub")
	lookFIFO(t, base+"/fifo")
	lookSymlink(t, "a.txt", base+"/to_file")
	lookSymlink(t, "sub", base+"/to_dir")
	lookSymlink(t, "nowhere", base+"/dangling")
	lookSymlink(t, "fifo", base+"/to_fifo")
	lookWrite(t, d+"/outside.txt", "0123456789")
	lookSymlink(t, d+"/outside.txt", base+"/escape")
	h := lookHarness(t)

	sorted := func(out string) string {
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		trailer := []string{}
		for len(lines) > 0 && strings.HasPrefix(lines[len(lines)-1], "[") {
			trailer = append([]string{lines[len(lines)-1]}, trailer...)
			lines = lines[:len(lines)-1]
		}
		slices.Sort(lines)
		return strings.Join(append(lines, trailer...), "\n") + "\n"
	}
	want := strings.Join([]string{
		"entry|.hidden|file|2",
		"entry|a.txt|file|5",
		"entry|dangling|symlink|0",
		"entry|escape|file|10",
		"entry|fifo|other|0",
		"entry|sub|directory|0",
		"entry|to_dir|directory|0",
		"entry|to_fifo|symlink|0",
		"entry|to_file|file|5",
	}, "\n") + "\n" + lookOK
	if got := sorted(lookRun(t, h, "list_dir", kv("path", base))); got != want {
		t.Errorf("no base:\n%s\nwant:\n%s", got, want)
	}
	// With base_dir, a link out of it is not followed: its target is not described.
	wantBase := strings.Replace(want, "entry|escape|file|10", "entry|escape|symlink|0", 1)
	if got := sorted(lookRun(t, h, "list_dir", kv("path", base, "base_dir", base))); got != wantBase {
		t.Errorf("with base:\n%s\nwant:\n%s", got, wantBase)
	}

	empty := filepath.Join(d, "empty")
	lookMkdir(t, empty)
	for _, c := range []struct {
		name   string
		params map[string]string
		want   string
	}{
		{"empty directory", kv("path", empty), lookOK},
		{"file", kv("path", base+"/a.txt"), "error|path is not a directory or does not exist\n" + lookFail},
		{"missing", kv("path", base+"/nope"), "error|path is not accessible or outside allowed base directory\n" + lookFail},
		{"outside base", kv("path", base, "base_dir", base+"/sub"),
			"error|path is not accessible or outside allowed base directory\n" + lookFail},
		{"missing path", kv(), "error|missing required parameter: path\n" + lookFail},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := lookRun(t, h, "list_dir", c.params); got != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}

	// The cap: 1000 entries are listed, then a warning, also at exactly 1000.
	for _, n := range []int{999, 1000, 1001, 1500} {
		t.Run(fmt.Sprintf("%d entries", n), func(t *testing.T) {
			dir := filepath.Join(d, fmt.Sprintf("many%d", n))
			lookMkdir(t, dir)
			for i := range n {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d", i)), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			o := h.Run("list_dir", kv("path", dir))
			entries, warnings := 0, 0
			for _, r := range o.Rows {
				switch {
				case strings.HasPrefix(r, "entry|"):
					entries++
				case r == "warning|output truncated at 1000 entries":
					warnings++
				default:
					t.Fatalf("unexpected row %q", r)
				}
			}
			wantEntries, wantWarnings := min(n, 1000), 0
			if n >= 1000 {
				wantWarnings = 1
			}
			if entries != wantEntries || warnings != wantWarnings || o.Result.Code != 0 {
				t.Fatalf("%d entries, %d warnings, rc %d; want %d, %d, 0", entries, warnings, o.Result.Code, wantEntries, wantWarnings)
			}
			if last := o.Rows[len(o.Rows)-1]; wantWarnings == 1 && !strings.HasPrefix(last, "warning|") {
				t.Fatalf("the warning is not last: %q", last)
			}
		})
	}
}

func TestRead(t *testing.T) {
	d := lookDir(t)
	h := lookHarness(t)
	file := func(name, content string) string {
		p := filepath.Join(d, name)
		lookWrite(t, p, content)
		return p
	}
	hosts := file("hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost\n")
	crlf := file("crlf", "one\r\ntwo\r\r\nthree\rx\r\nlast\r")
	binary := file("binary", "text\x00more")
	lateNUL := file("latenul", strings.Repeat("a", 600)+"\nbefore\x00after\nnext\n")
	var many strings.Builder
	for i := 1; i <= 20005; i++ {
		fmt.Fprintf(&many, "line %d\n", i)
	}
	big := file("many", many.String())
	lookFIFO(t, filepath.Join(d, "fifo"))
	lookMkdir(t, filepath.Join(d, "dir"))

	rows := func(from, to, total int, size int) string {
		var b strings.Builder
		for i := from; i <= to; i++ {
			fmt.Fprintf(&b, "line|%d|line %d\n", i, i)
		}
		fmt.Fprintf(&b, "total_lines|%d\nfile_size|%d\n", total, size)
		return b.String() + lookOK
	}
	for _, c := range []struct {
		name   string
		params map[string]string
		want   string
	}{
		{"hosts", kv("path", hosts), "line|1|127.0.0.1\tlocalhost\nline|2|::1\tlocalhost\ntotal_lines|2\nfile_size|34\n" + lookOK},
		// The SDK turns any other CR into a space: a row can never break the framing.
		{"crlf: one trailing CR removed", kv("path", crlf),
			"line|1|one\nline|2|two \nline|3|three x\nline|4|last\ntotal_lines|4\nfile_size|25\n" + lookOK},
		{"binary", kv("path", binary), "error|file appears to be binary\n" + lookFail},
		{"NUL after the probe cuts the line", kv("path", lateNUL, "offset", "2"),
			"line|2|before\nline|3|next\ntotal_lines|3\nfile_size|619\n" + lookOK},
		{"default page", kv("path", big), rows(1, 100, 20005, many.Len())},
		{"page", kv("path", big, "offset", "19999", "limit", "3"), rows(19999, 20001, 20005, many.Len())},
		{"page at the end", kv("path", big, "offset", "20004", "limit", "10"), rows(20004, 20005, 20005, many.Len())},
		{"offset past the end", kv("path", big, "offset", "30000"), rows(1, 0, 20005, many.Len())},
		{"offset 0 clamps to 1", kv("path", big, "offset", "0", "limit", "2"), rows(1, 2, 20005, many.Len())},
		{"negative offset clamps to 1", kv("path", big, "offset", "-7", "limit", "1"), rows(1, 1, 20005, many.Len())},
		{"limit 0 clamps to 1", kv("path", big, "limit", "0"), rows(1, 1, 20005, many.Len())},
		{"limit over 10000 clamps", kv("path", big, "limit", "2147483647"), rows(1, 10000, 20005, many.Len())},
		{"largest offset", kv("path", big, "offset", "2147483647"), rows(1, 0, 20005, many.Len())},
		{"fifo", kv("path", filepath.Join(d, "fifo")), "error|path is not a regular file\n" + lookFail},
		{"directory", kv("path", filepath.Join(d, "dir")), "error|path is not a regular file\n" + lookFail},
		{"missing", kv("path", filepath.Join(d, "nope")), "error|path is not accessible or outside allowed base directory\n" + lookFail},
		{"junk limit", kv("path", big, "limit", "12abc"), "error|parameter limit: not a valid int32: \"12abc\"\n" + lookFail},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := lookRun(t, h, "read", c.params); got != c.want {
				t.Errorf("got:\n%.2000s\nwant:\n%.2000s", got, c.want)
			}
		})
	}

	t.Run("line models", func(t *testing.T) {
		for _, c := range []struct{ content, want string }{
			{"", "total_lines|0\nfile_size|0\n"},
			{"\n", "line|1|\ntotal_lines|1\nfile_size|1\n"},
			{"a\n\nb", "line|1|a\nline|2|\nline|3|b\ntotal_lines|3\nfile_size|4\n"},
			{"a\nb\n", "line|1|a\nline|2|b\ntotal_lines|2\nfile_size|4\n"},
			{"\r", "line|1|\ntotal_lines|1\nfile_size|1\n"},
			{"x|y\n", "line|1|x|y\ntotal_lines|1\nfile_size|4\n"},
		} {
			p := file("model", c.content)
			if got := lookRun(t, h, "read", kv("path", p)); got != c.want+lookOK {
				t.Errorf("%q:\n%s\nwant:\n%s", c.content, got, c.want+lookOK)
			}
		}
	})

	t.Run("long line is cut with a warning", func(t *testing.T) {
		p := file("long", "short\n"+strings.Repeat("x", maxLineBytes+10)+"\r\nend")
		o := h.Run("read", kv("path", p))
		if len(o.Rows) != 6 || o.Rows[0] != "line|1|short" || o.Rows[1] != "line|2|"+strings.Repeat("x", maxLineBytes) ||
			o.Rows[2] != "warning|line 2 truncated to its first 1048576 bytes" || o.Rows[3] != "line|3|end" ||
			o.Rows[4] != "total_lines|3" {
			t.Fatalf("rows: %.300q", o.Rows)
		}
		// A line exactly at the cap (after its CR is removed) is not cut.
		p = file("exact", strings.Repeat("y", maxLineBytes)+"\r\n")
		o = h.Run("read", kv("path", p))
		if len(o.Rows) != 3 || o.Rows[0] != "line|1|"+strings.Repeat("y", maxLineBytes) {
			t.Fatalf("rows: %.300q", o.Rows)
		}
	})

	t.Run("100 MiB cap", func(t *testing.T) {
		over := filepath.Join(d, "over")
		lookSparse(t, over, "hello\n", maxTextFile+1)
		if got, want := lookRun(t, h, "read", kv("path", over)), "error|file too large (104857601 bytes, max 104857600)\n"+lookFail; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
		// Exactly at the cap is read: the zeros after the probe are one long
		// line, cut at its first NUL.
		at := filepath.Join(d, "at")
		head := strings.Repeat("h", binaryProbe) + "\n"
		lookSparse(t, at, head, maxTextFile)
		want := "line|1|" + head[:binaryProbe] + "\nline|2|\nwarning|line 2 truncated to its first 1048576 bytes\n" +
			"total_lines|2\nfile_size|104857600\n" + lookOK
		if got := lookRun(t, h, "read", kv("path", at)); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
}

// searchTree lays out, below root:
//
//	app/ app/logs/ app/logs/old/ app/logs/old/deep/ app/main.go app/logs/a.log
//	data.log  link_app -> app  link_log -> data.log
func searchTree(t *testing.T, root string) {
	lookMkdir(t, root+"/app/logs/old/deep")
	lookWrite(t, root+"/app/main.go", "x")
	lookWrite(t, root+"/app/logs/a.log", "x")
	lookWrite(t, root+"/data.log", "x")
	lookSymlink(t, "app", root+"/link_app")
	lookSymlink(t, "data.log", root+"/link_log")
}

func TestSearchDir(t *testing.T) {
	d := lookDir(t)
	searchTree(t, d)
	h := lookHarness(t)
	results := func(params map[string]string) []string {
		t.Helper()
		o := h.Run("search_dir", params)
		if o.Result.Code != 0 {
			t.Fatalf("%v: %v", params, o)
		}
		var rs []string
		for _, r := range o.Rows[:len(o.Rows)-1] {
			rs = append(rs, strings.TrimPrefix(strings.TrimPrefix(r, "result|"), d))
		}
		if want := "total_matches|" + strconv.Itoa(len(rs)); o.Rows[len(o.Rows)-1] != want {
			t.Fatalf("last row %q, want %q", o.Rows[len(o.Rows)-1], want)
		}
		slices.Sort(rs)
		return rs
	}
	for _, c := range []struct {
		name   string
		params map[string]string
		want   []string
	}{
		{"default: directories only", kv("root", d, "pattern", "*"),
			[]string{"/app|directory", "/app/logs|directory", "/app/logs/old|directory", "/app/logs/old/deep|directory", "/link_app|directory"}},
		{"files", kv("root", d, "pattern", "*", "match_type", "files"),
			[]string{"/app/logs/a.log|file", "/app/main.go|file", "/data.log|file", "/link_log|file"}},
		{"both, depth 1", kv("root", d, "pattern", "*", "match_type", "both", "max_depth", "1"),
			[]string{"/app|directory", "/data.log|file", "/link_app|directory", "/link_log|file"}},
		{"depth 2", kv("root", d, "pattern", "*", "max_depth", "2"),
			[]string{"/app|directory", "/app/logs|directory", "/link_app|directory"}},
		{"depth 0 clamps to 1", kv("root", d, "pattern", "*", "max_depth", "0"),
			[]string{"/app|directory", "/link_app|directory"}},
		{"depth 99 clamps to 20", kv("root", d, "pattern", "deep", "max_depth", "99"),
			[]string{"/app/logs/old/deep|directory"}},
		{"glob on names only", kv("root", d, "pattern", "*.log", "match_type", "files"),
			[]string{"/app/logs/a.log|file", "/data.log|file"}},
		{"glob class", kv("root", d, "pattern", "[a-d]*", "match_type", "both"),
			[]string{"/app|directory", "/app/logs/a.log|file", "/app/logs/old/deep|directory", "/data.log|file"}},
		{"regex must match the whole name", kv("root", d, "pattern", "lo", "regex", "true", "match_type", "both"), nil},
		{"regex", kv("root", d, "pattern", `[a-z]+\.(log|go)`, "regex", "true", "match_type", "files"),
			[]string{"/app/logs/a.log|file", "/app/main.go|file", "/data.log|file"}},
		{"regex is case-sensitive", kv("root", d, "pattern", "APP", "regex", "true"), nil},
		{"max_results", kv("root", d, "pattern", "old", "max_results", "0"), []string{"/app/logs/old|directory"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			slices.Sort(c.want)
			if got := results(c.params); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("got %q\nwant %q", got, c.want)
			}
		})
	}

	t.Run("max_results stops the walk", func(t *testing.T) {
		if got := results(kv("root", d, "pattern", "*", "match_type", "both", "max_results", "3")); len(got) != 3 {
			t.Fatalf("got %q", got)
		}
	})

	t.Run("walk order: each directory's entries right after it", func(t *testing.T) {
		o := h.Run("search_dir", kv("root", d, "pattern", "*", "match_type", "both", "max_depth", "20"))
		var paths []string
		for _, r := range o.Rows[:len(o.Rows)-1] {
			paths = append(paths, strings.Split(strings.TrimPrefix(r, "result|"), "|")[0])
		}
		for i, p := range paths {
			// Everything after p that lies below p must come before anything
			// that does not.
			below := true
			for _, q := range paths[i+1:] {
				in := strings.HasPrefix(q, p+"/")
				if in && !below {
					t.Fatalf("%s comes after a sibling subtree of %s: %q", q, p, paths)
				}
				below = below && in
			}
		}
	})

	t.Run("links to directories are typed but not entered", func(t *testing.T) {
		got := results(kv("root", d, "pattern", "*", "match_type", "both", "max_depth", "20"))
		for _, r := range got {
			if strings.HasPrefix(r, "/link_app/") {
				t.Fatalf("walked into the link: %q", got)
			}
		}
	})

	t.Run("a root that ends in a separator reaches one level further", func(t *testing.T) {
		// "/" is the only canonical root spelt with a trailing separator: its
		// entries are depth 0, so depth 1 reaches /usr/bin but not /usr/local/bin.
		o := h.Run("search_dir", kv("root", "/", "pattern", "bin", "max_depth", "1"))
		joined := strings.Join(o.Rows, "\n")
		if !strings.Contains(joined, "result|/usr/bin|directory") || strings.Contains(joined, "/usr/local/bin") {
			t.Fatalf("rows: %q", o.Rows)
		}
	})

	for _, c := range []struct {
		name   string
		params map[string]string
		want   string
	}{
		{"missing root", kv("pattern", "*"), "error|missing required parameters: root, pattern\n" + lookFail},
		{"missing pattern", kv("root", d), "error|missing required parameters: root, pattern\n" + lookFail},
		{"root not a directory", kv("root", d+"/data.log", "pattern", "*"), "error|root is not a directory\n" + lookFail},
		{"root missing", kv("root", d+"/nope", "pattern", "*"), "error|root is not accessible or outside allowed base directory\n" + lookFail},
		{"nested quantifiers that expand too far", kv("root", d, "pattern", "(a{1000}){1000}", "regex", "true"),
			"error|regex contains nested quantifiers (potential ReDoS)\n" + lookFail},
		{"nested quantifiers upstream refused are fine", kv("root", d, "pattern", "(a+)+", "regex", "true"),
			"total_matches|0\n" + lookOK},
		{"nested quantifiers are fine as a glob", kv("root", d, "pattern", "(a{1000}){1000}"), "total_matches|0\n" + lookOK},
		{"invalid regex", kv("root", d, "pattern", "(", "regex", "true"), "error|invalid regex: missing closing ): `(`\n" + lookFail},
		{"backreference", kv("root", d, "pattern", `(a)\1`, "regex", "true"), "error|invalid regex: invalid escape sequence: `\\1`\n" + lookFail},
		{"pattern too long", kv("root", d, "pattern", strings.Repeat("a", 257)), "error|pattern too long (max 256 chars)\n" + lookFail},
		{"bad match_type", kv("root", d, "pattern", "*", "match_type", "all"),
			"error|parameter match_type: must be one of directories, files, both (got \"all\")\n" + lookFail},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := lookRun(t, h, "search_dir", c.params); got != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}

	t.Run("cancelled", func(t *testing.T) {
		// In process the tree is walked before a cancel can arrive, so the
		// walk itself is asked.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		w := nameWalk{root: d, maxDepth: 20}
		visited := 0
		err := w.run(ctx, func(string, fs.DirEntry) bool { visited++; return true })
		if err == nil || visited != 0 {
			t.Fatalf("err %v after %d entries", err, visited)
		}
	})
}

// lookAttack is one hostile request: the exact rows it must get, and it must never
// show the content or the size of the files outside base_dir.
type lookAttack struct {
	name   string
	action string
	params map[string]string
	want   string
}

func TestLookAttackCorpus(t *testing.T) {
	d := lookDir(t)
	base := d + "/srv/log"
	lookWrite(t, base+"/app.txt", "visible\n")
	lookMkdir(t, base+"/sub")
	lookWrite(t, d+"/srv/logbackup/old.txt", "TOPSECRET sibling\n")
	lookWrite(t, d+"/outside/topsecret.txt", "TOPSECRET outside, 37 bytes long..\n")
	lookSymlink(t, d+"/outside/topsecret.txt", base+"/link_file")
	lookSymlink(t, d+"/outside", base+"/link_dir")
	lookSymlink(t, "../logbackup", base+"/link_sibling")
	lookSymlink(t, "app.txt", base+"/link_in")
	lookFIFO(t, base+"/fifo")
	secret := d + "/outside/topsecret.txt"
	long := "/" + strings.Repeat("a", 4096)
	const (
		notAcc  = "error|path is not accessible or outside allowed base directory\n" + lookFail
		rootNot = "error|root is not accessible or outside allowed base directory\n" + lookFail
		outside = "error|path is outside allowed base directory\n" + lookFail
	)
	hex64 := strings.Repeat("a", 64)
	var cases []lookAttack
	// Every path-taking action against every escape.
	escapes := []struct{ name, path string }{
		{"dot-dot", base + "/../../outside/topsecret.txt"},
		{"dot-dot after a directory", base + "/sub/../../logbackup/old.txt"},
		{"link to a file outside", base + "/link_file"},
		{"through a link to a directory outside", base + "/link_dir/topsecret.txt"},
		{"link to a prefix sibling", base + "/link_sibling/old.txt"},
		{"prefix sibling", d + "/srv/logbackup/old.txt"},
		{"/proc/self/root", "/proc/self/root" + secret},
		{"/proc/self/cwd", "/proc/self/cwd/../../../../../../../.." + secret},
		{"NUL byte", base + "/app.txt\x00/../../../outside/topsecret.txt"},
		{"absolute outside", secret},
	}
	for _, e := range escapes {
		for _, a := range []struct{ action, param, want string }{
			{"read", "path", notAcc},
			{"list_dir", "path", notAcc},
			{"file_hash", "path", notAcc},
			{"get_acl", "path", notAcc},
			{"get_signature", "path", notAcc},
			{"get_version_info", "path", notAcc},
			{"exists", "path", outside},
			{"search_dir", "root", rootNot},
		} {
			p := kv(a.param, e.path, "base_dir", base)
			want := a.want
			if a.action == "search_dir" {
				p["pattern"] = "*"
			}
			if a.action == "exists" && e.name == "NUL byte" {
				want = "error|path contains a NUL byte\n" + lookFail
			}
			cases = append(cases, lookAttack{a.action + ": " + e.name, a.action, p, want})
		}
	}
	cases = append(cases,
		lookAttack{"base_dir with a NUL", "read", kv("path", base+"/app.txt", "base_dir", base+"\x00"), notAcc},
		lookAttack{"base_dir that does not exist", "read", kv("path", base+"/app.txt", "base_dir", d+"/nope"), notAcc},
		lookAttack{"over-long path", "read", kv("path", long), "error|parameter path: exceeds maxLength 4096 (4097 bytes)\n" + lookFail},
		lookAttack{"over-long base_dir", "list_dir", kv("path", base, "base_dir", long),
			"error|parameter base_dir: exceeds maxLength 4096 (4097 bytes)\n" + lookFail},
		lookAttack{"over-long root", "search_dir", kv("root", long, "pattern", "*"),
			"error|parameter root: exceeds maxLength 4096 (4097 bytes)\n" + lookFail},
		lookAttack{"over-long directory", "find_by_hash", kv("directory", long, "sha256", hex64),
			"error|parameter directory: exceeds maxLength 4096 (4097 bytes)\n" + lookFail},
		lookAttack{"over-long pattern", "search_dir", kv("root", base, "pattern", strings.Repeat("*", 257)),
			"error|pattern too long (max 256 chars)\n" + lookFail},
		lookAttack{"over-long regex", "search_dir", kv("root", base, "pattern", strings.Repeat("a", 300), "regex", "true"),
			"error|pattern too long (max 256 chars)\n" + lookFail},
		lookAttack{"malformed regex", "search_dir", kv("root", base, "pattern", "[z-a]", "regex", "true"),
			"error|invalid regex: invalid character class range: `z-a`\n" + lookFail},
		lookAttack{"lookahead", "search_dir", kv("root", base, "pattern", "(?=a)", "regex", "true"),
			"error|invalid regex: invalid or unsupported Perl syntax: `(?=`\n" + lookFail},
		lookAttack{"nested quantifier", "search_dir", kv("root", base, "pattern", "(?:(?:.?){10}){100}", "regex", "true"),
			"error|regex contains nested quantifiers (potential ReDoS)\n" + lookFail},
		lookAttack{"junk offset", "read", kv("path", base+"/app.txt", "offset", "12abc"),
			"error|parameter offset: not a valid int32: \"12abc\"\n" + lookFail},
		lookAttack{"hex limit", "read", kv("path", base+"/app.txt", "limit", "0x10"),
			"error|parameter limit: not a valid int32: \"0x10\"\n" + lookFail},
		lookAttack{"spaced max_depth", "search_dir", kv("root", base, "pattern", "*", "max_depth", " 5"),
			"error|parameter max_depth: not a valid int32: \" 5\"\n" + lookFail},
		lookAttack{"huge max_results", "search_dir", kv("root", base, "pattern", "*", "max_results", "99999999999"),
			"error|parameter max_results: \"99999999999\" is out of range for int32\n" + lookFail},
		lookAttack{"junk find_by_hash depth", "find_by_hash", kv("directory", base, "sha256", hex64, "max_depth", "3x"),
			"error|parameter max_depth: not a valid int32: \"3x\"\n" + lookFail},
		lookAttack{"non-hex sha256", "find_by_hash", kv("directory", base, "sha256", strings.Repeat("g", 64)),
			"error|invalid sha256: expected 64 hexadecimal digits\n" + lookFail},
		lookAttack{"short sha256", "find_by_hash", kv("directory", base, "sha256", "abc"),
			"error|parameter sha256: shorter than minLength 64 (3 bytes)\n" + lookFail},
		lookAttack{"NUL in directory", "find_by_hash", kv("directory", base+"\x00/..", "sha256", hex64),
			"error|directory is not accessible\n" + lookFail},
		lookAttack{"unsupported algorithm", "file_hash", kv("path", base+"/app.txt", "algorithm", "md5"),
			"error|unsupported algorithm: md5\n" + lookFail},
		lookAttack{"FIFO read never blocks", "read", kv("path", base+"/fifo", "base_dir", base),
			"error|path is not a regular file\n" + lookFail},
		lookAttack{"FIFO hash never blocks", "file_hash", kv("path", base+"/fifo", "base_dir", base),
			"error|path is not a regular file or does not exist\n" + lookFail},
	)
	h := lookHarness(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := lookRun(t, h, c.action, c.params)
			if got != c.want {
				t.Errorf("%s %q:\ngot:\n%s\nwant:\n%s", c.action, c.params, got, c.want)
			}
			if strings.Contains(got, "TOPSECRET") {
				t.Errorf("leaked outside content: %s", got)
			}
		})
	}
	t.Logf("%d attack cases", len(cases))

	// Inside base_dir nothing outside is described: the walk and the listing see
	// the links but neither follow them out nor report their targets.
	for _, c := range []struct {
		action string
		params map[string]string
	}{
		{"list_dir", kv("path", base, "base_dir", base)},
		{"search_dir", kv("root", base, "pattern", "*", "match_type", "both", "max_depth", "20", "base_dir", base)},
		{"search_dir", kv("root", base, "pattern", "*top*", "match_type", "both", "max_depth", "20", "base_dir", base)},
	} {
		got := lookRun(t, h, c.action, c.params)
		if strings.Contains(got, "topsecret") || strings.Contains(got, "old.txt") || strings.Contains(got, "|37") ||
			strings.Contains(got, "link_dir|directory") || strings.Contains(got, "link_file|file") {
			t.Errorf("%s described a target outside base_dir:\n%s", c.action, got)
		}
	}
	// And links inside base_dir keep working.
	if got, want := lookRun(t, h, "read", kv("path", base+"/link_in", "base_dir", base)),
		"line|1|visible\ntotal_lines|1\nfile_size|8\n"+lookOK; got != want {
		t.Errorf("link inside base: %q, want %q", got, want)
	}
}
