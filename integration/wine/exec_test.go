//go:build linux

package wine

import (
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestWindowsTags runs every tags action through yuzu-agent.exe, the real supervisor
// (private copy, Job Object) and the real plugin child over go-plugin on Windows
// loopback, with the store on the Windows side's file semantics: the first and last
// commands through exec (an agent and a plugin process each), the others as fleet
// commands to one running agent; each process sees what the others wrote.
func TestWindowsTags(t *testing.T) {
	needWine(t)
	t.Parallel()
	w := newWorld(t, tagsExe)
	w.expect("tag_set|env|prod\n"+undeclared, 0, "tags", "set", "key=env", "value=prod")
	f := w.startFleet(t, true)
	f.expect("tag_set|site|lab 7\n"+undeclared, 0, "tags", "set", "key=site", "value=lab 7")
	f.expect("tag|env|prod\n"+undeclared, 0, "tags", "get", "key=env")
	f.expect("tag|env|prod\ntag|site|lab 7\ncount|2\n"+undeclared, 0, "tags", "get_all")
	f.expect("tag_exists|env|true\n"+undeclared, 0, "tags", "check", "key=env")
	f.expect("count|2\n"+undeclared, 0, "tags", "count")
	f.expect("tag_deleted|env|true\n"+undeclared, 0, "tags", "delete", "key=env")
	f.expect("tag_exists|env|false\n"+undeclared, 0, "tags", "check", "key=env")
	f.expect("tags_cleared|1\n"+undeclared, 0, "tags", "clear")
	f.expect("error|invalid key: bad key\n"+undeclared+rc1, 1, "tags", "set", "key=bad key", "value=x")
	w.expect("count|0\n"+undeclared, 0, "tags", "count")
	if _, err := os.Stat(filepath.Join(w.dataDir, "tags.json")); err != nil {
		t.Errorf("the store is not in the data dir given as %s: %v", winPath(w.dataDir), err)
	}
}

// fixtureDir makes a directory of files for the filesystem actions.
func fixtureDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "a.txt"), "hello\nworld\n")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "sub", "b.log"), "one\r\ntwo\r\nthree\r\n")
	return dir
}

// TestWindowsFilesystemLook runs the read-only filesystem actions on Z:\ paths (the
// Linux side) and C:\ paths (the prefix), base_dir included: two through exec, the
// others as fleet commands to one running agent.
func TestWindowsFilesystemLook(t *testing.T) {
	needWine(t)
	t.Parallel()
	w := newWorld(t, fsExe)
	dir := fixtureDir(t)
	d, a := winPath(dir), winPath(filepath.Join(dir, "a.txt"))

	w.expect("exists|true\ntype|file\nsize|12\n"+undeclared, 0, "filesystem", "exists", "path="+a)
	w.expect("error|path is outside allowed base directory\n"+undeclared+rc1, 1,
		"filesystem", "exists", "path="+a, "base_dir="+d+`\sub`)
	f := w.startFleet(t, true)
	f.expect("exists|true\ntype|directory\nsize|0\n"+undeclared, 0, "filesystem", "exists", "path="+d+`\sub`)
	f.expect("exists|false\n"+undeclared, 0, "filesystem", "exists", "path="+d+`\missing.txt`)
	f.expect("exists|true\ntype|file\nsize|12\n"+undeclared, 0, "filesystem", "exists", "path="+a, "base_dir="+d)
	f.expect("error|path is outside allowed base directory\n"+undeclared+rc1, 1,
		"filesystem", "exists", "path="+d+`\sub\..\a.txt`, "base_dir="+d+`\sub`)
	// A spelling with the other separator and another case is the same file.
	f.expect("exists|true\ntype|file\nsize|12\n"+undeclared, 0, "filesystem", "exists",
		"path="+strings.ToUpper(d[:1])+strings.ReplaceAll(d[1:], `\`, `/`)+"/A.TXT")
	f.expect("exists|true\ntype|file\nsize|2148419\n"+undeclared, 0, "filesystem", "exists",
		`path=C:\windows\system32\kernel32.dll`, `base_dir=C:\windows`)

	// The listing is in the system's order: compared as a set.
	if got := sortedLines(f.exec("filesystem", "list_dir", "path="+d).stdout); got != sortedLines(fleetForm("entry|a.txt|file|12\nentry|sub|directory|0\n"+undeclared)) {
		t.Errorf("list_dir: %q", got)
	}
	f.expect("line|1|hello\nline|2|world\ntotal_lines|2\nfile_size|12\n"+undeclared, 0, "filesystem", "read", "path="+a)
	// CRLF lines read cleanly.
	f.expect("line|2|two\nline|3|three\ntotal_lines|3\nfile_size|17\n"+undeclared, 0,
		"filesystem", "read", "path="+d+`\sub\b.log`, "offset=2")
	f.expect("error|path is not accessible or outside allowed base directory\n"+undeclared+rc1, 1,
		"filesystem", "read", `path=C:\windows\win.ini`, `base_dir=C:\users`)

	f.expect("match|2|world\ntotal_matches|1\n"+undeclared, 0, "filesystem", "search", "path="+a, "pattern=WOR", "case_sensitive=false")
	f.expect("result|"+d+`\sub\b.log|file`+"\ntotal_matches|1\n"+undeclared, 0,
		"filesystem", "search_dir", "root="+d, "pattern=*.log", "match_type=files")
	f.expect("result|"+d+`\sub|directory`+"\ntotal_matches|1\n"+undeclared, 0,
		"filesystem", "search_dir", "root="+d, "pattern=s?b")

	// get_signature and get_version_info on the prefix's own files.
	f.expect("signature_status|unsigned\n"+undeclared, 0, "filesystem", "get_signature", `path=C:\windows\system32\kernel32.dll`)
	r := f.exec("filesystem", "get_version_info", `path=C:\windows\system32\kernel32.dll`)
	if r.code != 0 || !strings.Contains(r.stdout, "\ncompany_name|Microsoft Corporation\n") || !strings.HasPrefix(r.stdout, "file_version|") {
		t.Errorf("get_version_info of Wine's kernel32.dll:\n%s", r)
	}
	f.expect("error|no version info found in file\n"+undeclared+rc1, 1, "filesystem", "get_version_info", `path=C:\windows\notepad.exe`)
}

func sortedLines(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestWindowsFilesystemChange runs the actions that create and change files, as fleet
// commands to one running agent.
func TestWindowsFilesystemChange(t *testing.T) {
	needWine(t)
	t.Parallel()
	w := newWorld(t, fsExe)
	dir := fixtureDir(t)
	d, a := winPath(dir), winPath(filepath.Join(dir, "a.txt"))
	f := w.startFleet(t, true)

	r := f.exec("filesystem", "create_temp", "directory="+d, "prefix=t-", "suffix=.dat")
	m := regexp.MustCompile(`^path\|(.*\\t-[0-9a-f]{32}\.dat)\npersist\|true\n` + regexp.QuoteMeta(fleetForm(undeclared)) + `$`).FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		t.Fatalf("create_temp:\n%s", r)
	}
	if _, err := os.Stat(filepath.Join(dir, m[1][len(d)+1:])); err != nil {
		t.Errorf("create_temp reported %s, not on disk: %v", m[1], err)
	}
	r = f.exec("filesystem", "create_temp_dir", "directory="+d, "persist=false")
	if r.code != 0 || !regexp.MustCompile(`^path\|.*\\yuzu-[0-9a-f]{32}\npersist\|false\ncleanup\|deleted\n`).MatchString(r.stdout) {
		t.Errorf("create_temp_dir:\n%s", r)
	}
	// No directory given: the system's temporary path, inside the prefix.
	r = f.exec("filesystem", "create_temp", "persist=false")
	if r.code != 0 || !regexp.MustCompile(`^path\|C:\\users\\[^\\]+\\Temp\\yuzu-[0-9a-f]{32}\.tmp\n`).MatchString(r.stdout) {
		t.Errorf("create_temp in the default directory:\n%s", r)
	}

	f.expect("replacements_made|1\nfile_size_before|12\nfile_size_after|12\n"+undeclared, 0,
		"filesystem", "replace", "path="+a, "search=world", "replacement=there")
	b := d + `\new.txt`
	f.expect("status|ok\nbytes_written|3\npath|"+b+"\n"+undeclared, 0,
		"filesystem", "write_content", "path="+b, "content=abc", "create=true")
	f.expect("status|ok\nbytes_appended|4\ntotal_size|7\n"+undeclared, 0, "filesystem", "append", "path="+b, "content=def")
	f.expect("lines_deleted|1\ntotal_lines_before|2\ntotal_lines_after|1\n"+undeclared, 0,
		"filesystem", "delete_lines", "path="+a, "start_line=1", "end_line=1")
	if got := readFile(t, filepath.Join(dir, "a.txt")); got != "there\n" {
		t.Errorf("a.txt after replace and delete_lines: %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "new.txt")); got != "abc\ndef" {
		t.Errorf("new.txt after write_content and append: %q", got)
	}
	f.expect("error|file exists and overwrite=false\n"+undeclared+rc1, 1,
		"filesystem", "write_content", "path="+b, "content=x", "create=true")
	// Nothing was left behind by the atomic writes.
	if left, _ := filepath.Glob(filepath.Join(dir, "*.tmp.*")); len(left) > 0 {
		t.Errorf("temp files left: %v", left)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWindowsFileHash: the in-process SHA-256 and SHA-1 of a 3 MiB random file equal
// sha256sum's and sha1sum's (fleet commands to one running agent).
func TestWindowsFileHash(t *testing.T) {
	needWine(t)
	t.Parallel()
	f := newWorld(t, fsExe).startFleet(t, true)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "rand.bin")
	data := make([]byte, 3<<20+17)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, alg := range []string{"sha256", "sha1"} {
		out, err := exec.Command(alg+"sum", p).Output()
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Fields(string(out))[0]
		f.expect("hash|"+want+"\nalgorithm|"+alg+"\nsize|3145745\n"+undeclared, 0,
			"filesystem", "file_hash", "path="+winPath(p), "algorithm="+alg)
	}
}
