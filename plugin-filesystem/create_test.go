//go:build unix

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/cryptotest"

	"golang.org/x/sys/unix"
)

func TestCreateTemp(t *testing.T) {
	h := chgHarness(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	other := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(other, "plain")
	chgWrite(t, file, "", 0o644)
	q := regexp.QuoteMeta
	tests := []struct {
		name   string
		dir    bool
		env    map[string]string
		params map[string]string
		want   string // regular expression for the rows joined by newlines
		rc     int
	}{
		{"defaults", false, nil, nil, `^path\|` + q(tmp) + `/yuzu-[A-Za-z0-9]{6}\.tmp\npersist\|true$`, 0},
		{"TMPDIR ending in a slash", false, map[string]string{"TMPDIR": tmp + "/"}, nil,
			`^path\|` + q(tmp) + `//yuzu-[A-Za-z0-9]{6}\.tmp\npersist\|true$`, 0},
		{"TMP when TMPDIR is empty", false, map[string]string{"TMPDIR": "", "TMP": other}, nil,
			`^path\|` + q(other) + `/yuzu-[A-Za-z0-9]{6}\.tmp\npersist\|true$`, 0},
		{"directory as given, through a link", false, nil, map[string]string{"directory": link},
			`^path\|` + q(link) + `/yuzu-[A-Za-z0-9]{6}\.tmp\npersist\|true$`, 0},
		{"prefix and suffix", false, nil, map[string]string{"prefix": "app.", "suffix": ".log"},
			`^path\|` + q(tmp) + `/app\.[A-Za-z0-9]{6}\.log\npersist\|true$`, 0},
		{"empty prefix and suffix fall back", false, nil, map[string]string{"prefix": "", "suffix": ""},
			`^path\|` + q(tmp) + `/yuzu-[A-Za-z0-9]{6}\.tmp\npersist\|true$`, 0},
		{"persist false deletes", false, nil, map[string]string{"persist": "false"},
			`^path\|` + q(tmp) + `/yuzu-[A-Za-z0-9]{6}\.tmp\npersist\|false\ncleanup\|deleted$`, 0},
		{"persist junk", false, nil, map[string]string{"persist": "no"},
			`^error\|parameter persist: must be one of true, false \(got "no"\)$`, 1},
		{"prefix with a separator", false, nil, map[string]string{"prefix": "../escape"},
			`^error\|prefix and suffix must not contain a path separator$`, 1},
		{"suffix with a separator", false, nil, map[string]string{"suffix": "/../../x"},
			`^error\|prefix and suffix must not contain a path separator$`, 1},
		{"prefix too long", false, nil, map[string]string{"prefix": strings.Repeat("p", 65)},
			`^error\|parameter prefix: exceeds maxLength 64 \(65 bytes\)$`, 1},
		{"missing directory", false, nil, map[string]string{"directory": filepath.Join(tmp, "nope")},
			`^error\|directory does not exist or is not accessible$`, 1},
		{"directory with NUL", false, nil, map[string]string{"directory": tmp + "\x00/etc"},
			`^error\|directory does not exist or is not accessible$`, 1},
		{"directory is a file", false, nil, map[string]string{"directory": file},
			`^error\|specified directory is not a directory$`, 1},
		{"unusable TMPDIR", false, map[string]string{"TMPDIR": filepath.Join(tmp, "nope")}, nil,
			`^error\|failed to create temporary file$`, 1},
		{"dir defaults", true, nil, nil, `^path\|` + q(tmp) + `/yuzu-[A-Za-z0-9]{6}\npersist\|true$`, 0},
		{"dir in directory", true, nil, map[string]string{"directory": other + "/", "prefix": "d-"},
			`^path\|` + q(other) + `//d-[A-Za-z0-9]{6}\npersist\|true$`, 0},
		{"dir persist false", true, nil, map[string]string{"persist": "false"},
			`^path\|` + q(tmp) + `/yuzu-[A-Za-z0-9]{6}\npersist\|false\ncleanup\|deleted$`, 0},
		{"dir prefix with a separator", true, nil, map[string]string{"prefix": "a/b"},
			`^error\|prefix and suffix must not contain a path separator$`, 1},
		{"dir missing directory", true, nil, map[string]string{"directory": "/nonexistent/dir"},
			`^error\|directory does not exist or is not accessible$`, 1},
		{"dir unusable TMPDIR", true, map[string]string{"TMPDIR": file}, nil,
			`^error\|failed to create temporary directory$`, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			action := "create_temp"
			if tc.dir {
				action = "create_temp_dir"
			}
			got, rc := chgRun(t, h, action, tc.params)
			if rc != tc.rc || !regexp.MustCompile(tc.want).MatchString(got) {
				t.Fatalf("rc %d\n%s\nwant rc %d matching %s", rc, got, tc.rc, tc.want)
			}
			if rc != 0 {
				return
			}
			p := strings.TrimPrefix(strings.SplitN(got, "\n", 2)[0], "path|")
			fi, err := os.Lstat(p)
			if strings.Contains(got, "cleanup|deleted") {
				if err == nil {
					t.Errorf("%s not deleted", p)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := os.FileMode(0o600)
			if tc.dir {
				want = os.ModeDir | 0o700
			}
			if fi.Mode() != want {
				t.Errorf("mode %v, want %v", fi.Mode(), want)
			}
		})
	}
}

// TestCreateTempModeIgnoresUmask: the modes are exactly 0600 and 0700 whatever the
// umask, as upstream's mkstemp/mkdtemp give them.
func TestCreateTempModeIgnoresUmask(t *testing.T) {
	h := chgHarness(t)
	dir := t.TempDir()
	for _, mask := range []int{0, 0o022, 0o077, 0o277} {
		old := unix.Umask(mask)
		gotF, rcF := chgRun(t, h, "create_temp", map[string]string{"directory": dir})
		gotD, rcD := chgRun(t, h, "create_temp_dir", map[string]string{"directory": dir})
		unix.Umask(old)
		if rcF != 0 || rcD != 0 {
			t.Fatalf("umask %o: %s / %s", mask, gotF, gotD)
		}
		for _, c := range []struct {
			rows string
			want os.FileMode
		}{{gotF, 0o600}, {gotD, os.ModeDir | 0o700}} {
			p := strings.TrimPrefix(strings.SplitN(c.rows, "\n", 2)[0], "path|")
			fi, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode() != c.want {
				t.Errorf("umask %03o: %s has mode %v, want %v", mask, p, fi.Mode(), c.want)
			}
		}
	}
}

// predictedTempNames returns the names create_temp will draw after
// cryptotest.SetGlobalRandom(t, seed), in order, by drawing them the same way.
func predictedTempNames(t *testing.T, seed uint64, n int) []string {
	t.Helper()
	cryptotest.SetGlobalRandom(t, seed)
	names := make([]string, n)
	for i := range names {
		var err error
		if names[i], err = tempName(defaultTempPrefix, defaultTempSuffix); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// TestCreateTempCollisions: a taken name, a link planted at a name included, is
// skipped for the next random one and never followed; a directory whose names are all
// taken makes the action give up after a bounded number of tries.
func TestCreateTempCollisions(t *testing.T) {
	const seed = 7
	h := chgHarness(t)
	t.Run("taken names are skipped", func(t *testing.T) {
		dir := t.TempDir()
		victim := filepath.Join(t.TempDir(), "victim")
		names := predictedTempNames(t, seed, 4)
		chgWrite(t, filepath.Join(dir, names[0]), "taken", 0o644)
		if err := os.Symlink(victim, filepath.Join(dir, names[1])); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(dir, names[2]), 0o755); err != nil {
			t.Fatal(err)
		}
		cryptotest.SetGlobalRandom(t, seed)
		got, rc := chgRun(t, h, "create_temp", map[string]string{"directory": dir})
		if want := "path|" + dir + "/" + names[3] + "\npersist|true"; rc != 0 || got != want {
			t.Fatalf("rc %d %q, want %q", rc, got, want)
		}
		if _, err := os.Lstat(victim); err == nil {
			t.Error("link followed: victim created")
		}
		if chgRead(t, filepath.Join(dir, names[0])) != "taken" {
			t.Error("taken file changed")
		}
	})
	t.Run("bounded retries", func(t *testing.T) {
		dir := t.TempDir()
		for _, n := range predictedTempNames(t, seed, tempAttempts) {
			chgWrite(t, filepath.Join(dir, n), "", 0o644)
		}
		cryptotest.SetGlobalRandom(t, seed)
		got, rc := chgRun(t, h, "create_temp", map[string]string{"directory": dir})
		if rc != 1 || got != "error|failed to create temporary file" {
			t.Fatalf("rc %d %q", rc, got)
		}
	})
	t.Run("path too long", func(t *testing.T) {
		dir := t.TempDir()
		for len(dir) < maxTempPathBytes-12 {
			dir = filepath.Join(dir, strings.Repeat("d", 100))
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		got, rc := chgRun(t, h, "create_temp", map[string]string{"directory": dir})
		if rc != 1 || got != "error|failed to create temporary file" {
			t.Fatalf("rc %d %q", rc, got)
		}
	})
}

func TestRandomAlnum(t *testing.T) {
	seen := map[byte]int{}
	for range 2000 {
		s, err := randomAlnum(6)
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != 6 {
			t.Fatalf("%q", s)
		}
		for i := range len(s) {
			if !strings.ContainsRune(alnum, rune(s[i])) {
				t.Fatalf("%q has %q", s, s[i])
			}
			seen[s[i]]++
		}
	}
	if len(seen) != len(alnum) {
		t.Errorf("only %d of %d characters drawn in 12000", len(seen), len(alnum))
	}
}
