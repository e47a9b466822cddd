package trust

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

func sumOf(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func TestParseRefuses(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	entry := func(file string) string {
		return `{"format":1,"plugins":{"procs":{"file":"` + file + `","sha256":"` + sum + `"}}}`
	}
	bad := map[string]string{
		"later format":       `{"format":2,"plugins":{}}`,
		"unknown field":      `{"format":1,"plugins":{"procs":{"file":"yuzu-plugin-procs","sha256":"` + sum + `","sha1":"x"}}}`,
		"absolute file":      entry("/usr/bin/yuzu-plugin-procs"),
		"dot dot":            entry("../yuzu-plugin-procs"),
		"other name":         entry("yuzu-plugin-tags"),
		"other plugin store": entry("store/tags/0123456789abcdef/yuzu-plugin-procs"),
		"store not hex":      entry("store/procs/0123456789abcdeX/yuzu-plugin-procs"),
		"bad name":           `{"format":1,"plugins":{"pro-cs":{"file":"yuzu-plugin-pro-cs","sha256":"` + sum + `"}}}`,
		"short sha":          `{"format":1,"plugins":{"procs":{"file":"yuzu-plugin-procs","sha256":"abcd"}}}`,
		"half signed":        `{"format":1,"plugins":{"procs":{"file":"yuzu-plugin-procs","sha256":"` + sum + `","publisher":"acme"}}}`,
		"two values":         `{"format":1,"plugins":{}} {}`,
		"null entry":         `{"format":1,"plugins":{"procs":null}}`,
	}
	for name, text := range bad {
		if _, err := Parse([]byte(text)); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
	c, err := Parse([]byte(entry("store/procs/0123456789abcdef/yuzu-plugin-procs.exe")))
	if err != nil || c.Entry("procs").Name() != "procs" {
		t.Fatalf("a store build: %v", err)
	}
}

func TestMigrate(t *testing.T) {
	dir := t.TempDir()
	sum := strings.Repeat("0f", 32)
	legacy := sum + "  yuzu-plugin-tags\n" + sum + " *yuzu-plugin-hello\n# a comment\n" + sum + "  README\n"
	if err := os.WriteFile(filepath.Join(dir, LegacyName), []byte(legacy), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.Migrated != 2 || c.MigrationErr != nil || c.Entry("tags").SHA256 != sum || c.Entry("hello").File != "yuzu-plugin-hello" {
		t.Fatalf("migrated %d (%v): %+v", c.Migrated, c.MigrationErr, c.Plugins)
	}
	if _, err := os.Stat(filepath.Join(dir, LegacyName+".migrated")); err != nil {
		t.Errorf("the old manifest was not moved aside: %v", err)
	}
	again, err := Load(dir)
	if err != nil || again.Migrated != 0 || len(again.Plugins) != 2 {
		t.Errorf("second load: %v, migrated %d", err, again.Migrated)
	}
	if fi, err := os.Stat(Path(dir)); err != nil || (modeChecked && fi.Mode().Perm() != Mode) {
		t.Errorf("catalog mode: %v %v", fi.Mode(), err)
	}

	// A damaged manifest is refused, naming its line; no manifest at all is ErrNoCatalog.
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, LegacyName), []byte("not a checksum line\n"), 0o644)
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "plugins.sha256 line 1") {
		t.Errorf("damaged manifest: %v", err)
	}
	if _, err := Load(t.TempDir()); !errors.Is(err, ErrNoCatalog) {
		t.Errorf("empty dir: %v", err)
	}
}

// floorsIn makes an empty set of floors kept in a temp dir.
func floorsIn(t *testing.T) *Floors {
	f, err := LoadFloors(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func candidate(name, version string, bin []byte) Candidate {
	sum := sumOf(bin)
	return Candidate{Name: name, SHA256: sum, File: StorePath(name, sum, runtime.GOOS), Version: version,
		OS: runtime.GOOS, Arch: runtime.GOARCH, Protocol: 1, Source: "test"}
}

func TestPlan(t *testing.T) {
	none := &Keys{Publishers: map[string]*Publisher{}}
	cat := &Catalog{Plugins: map[string]*Entry{}}
	floors := floorsIn(t)
	v1, v2, v2b, v3 := []byte("v1"), []byte("v2"), []byte("v2 rebuilt"), []byte("v3")
	plan := func(c Candidate, o Options) (Change, error) { return Plan(cat, none, floors, c, o) }

	ch, err := plan(candidate("procs", "1.0.0", v1), Options{})
	if err != nil || ch.Kind != KindNew {
		t.Fatalf("new: %+v %v", ch, err)
	}
	cat.Put("procs", ch.Entry)
	floors.Raise("procs", "1.0.0")
	ch, err = plan(candidate("procs", "2.0.0", v2), Options{})
	if err != nil || ch.Kind != KindUpgrade || ch.Describe() != "procs 1.0.0 -> 2.0.0 (sha256 "+sumOf(v2)[:12]+") (upgrade)" {
		t.Fatalf("upgrade: %+v %v (%s)", ch, err, ch.Describe())
	}
	cat.Put("procs", ch.Entry)
	floors.Raise("procs", "2.0.0")
	if cat.Entry("procs").Previous == nil || cat.Entry("procs").Previous.Version != "1.0.0" {
		t.Fatal("the replaced build was not kept")
	}
	if ch, err := plan(candidate("procs", "2.0.0", v2), Options{}); err != nil || ch.Kind != KindSame {
		t.Errorf("the same build again: %+v %v", ch, err)
	}

	refusals := []struct {
		name   string
		c      Candidate
		o      Options
		reason string
	}{
		{"same version, other bytes", candidate("procs", "2.0.0", v2b), Options{}, "version 2.0.0 is installed already as other bytes"},
		{"build metadata only", candidate("procs", "2.0.0+2", v2b), Options{}, "installed already as other bytes"},
		{"downgrade", candidate("procs", "1.0.0", v1), Options{}, "a downgrade from 2.0.0"},
		{"unordered", candidate("procs", "latest", v3), Options{}, "cannot be ordered"},
		{"other system", func() Candidate { c := candidate("procs", "3.0.0", v3); c.OS = "plan9"; return c }(), Options{}, "built for plan9/"},
	}
	for _, r := range refusals {
		_, err := plan(r.c, r.o)
		var re *RefusedError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), r.reason) {
			t.Errorf("%s: %v, want %q", r.name, err, r.reason)
		}
	}
	if ch, err := plan(candidate("procs", "2.0.0", v2b), Options{Force: true}); err != nil || ch.Kind != KindRebuild {
		t.Errorf("forced rebuild: %+v %v", ch, err)
	}
	if ch, err := plan(candidate("procs", "1.0.0", v1), Options{AllowDowngrade: true}); err != nil || ch.Kind != KindDowngrade {
		t.Errorf("allowed downgrade: %+v %v", ch, err)
	}

	// The floor holds even when the catalog forgot the plugin (removed, or the plugin
	// dir replaced).
	cat.Remove("procs")
	if _, err := plan(candidate("procs", "1.0.0", v1), Options{}); err == nil || !strings.Contains(err.Error(), "below its version floor 2.0.0") {
		t.Errorf("below the floor: %v", err)
	}

	// Where keys are configured, an unsigned build is refused.
	keys := &Keys{Dir: "/etc/yuzu/publishers", Publishers: map[string]*Publisher{"acme": {Name: "acme"}}}
	if _, err := Plan(cat, keys, floors, candidate("procs", "3.0.0", v3), Options{}); err == nil || !strings.Contains(err.Error(), "unsigned") {
		t.Errorf("unsigned with keys: %v", err)
	}
}

func TestApplyAndRollBack(t *testing.T) {
	dir, floors := t.TempDir(), floorsIn(t)
	none := &Keys{Publishers: map[string]*Publisher{}}
	ctx := context.Background()
	install := func(version string, bin []byte, o Options) (Change, error) {
		c := candidate("procs", version, bin)
		file, sum, err := WriteBuild(dir, "procs", bin, runtime.GOOS)
		if err != nil || file != c.File || sum != c.SHA256 {
			t.Fatalf("WriteBuild: %s %s %v", file, sum, err)
		}
		return Apply(ctx, dir, none, floors, c, o)
	}
	for _, v := range []string{"1.0.0", "2.0.0", "3.0.0"} {
		if _, err := install(v, []byte("build "+v), Options{}); err != nil {
			t.Fatal(err)
		}
	}
	// Only the current and previous builds stay in the store.
	builds, _ := os.ReadDir(filepath.Join(dir, StoreDir, "procs"))
	if len(builds) != 2 {
		t.Errorf("%d builds kept in the store, want 2", len(builds))
	}
	if floors.Floor("procs") != "3.0.0" {
		t.Errorf("floor %q", floors.Floor("procs"))
	}
	back, from, err := RollBack(ctx, dir, floors, "procs", "", "crashed 3 times within 60s")
	if err != nil || back.Version != "2.0.0" || from.Version != "3.0.0" {
		t.Fatalf("rollback: %+v %+v %v", back, from, err)
	}
	cat, _ := Load(dir)
	if e := cat.Entry("procs"); e.Version != "2.0.0" || e.Previous != nil || len(e.Rejected) != 1 {
		t.Fatalf("after the rollback: %+v", e)
	}
	if floors.Floor("procs") != "2.0.0" {
		t.Errorf("floor after the rollback %q", floors.Floor("procs"))
	}
	// The rolled-back build is not taken again unless forced; another one is.
	if _, err := install("3.0.0", []byte("build 3.0.0"), Options{}); err == nil || !strings.Contains(err.Error(), "was rolled back on") {
		t.Errorf("the rolled-back build again: %v", err)
	}
	if ch, err := install("3.0.1", []byte("build 3.0.1"), Options{}); err != nil || ch.Kind != KindUpgrade {
		t.Errorf("a different build: %+v %v", ch, err)
	}
	if _, _, err := RollBack(ctx, dir, floors, "nosuch", "", "x"); err == nil {
		t.Error("rolled back a plugin that is not there")
	}
	// Floors survive a reload.
	again, err := LoadFloors(filepath.Dir(floors.path))
	if err != nil || again.Floor("procs") != "3.0.1" {
		t.Errorf("floors reloaded: %v %v", again.Versions, err)
	}
}

func TestCatalogLockExcludes(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Acquire(ctx, dir); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a second holder got the lock: %v", err)
	}
	l.Release()
	l2, err := Acquire(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	l2.Release()
}

// fileShape is the regular expression it replaced, for every file shape near the
// boundaries of each part.
func TestFileShapeIsTheRegexp(t *testing.T) {
	re := regexp.MustCompile(`^(` + StoreDir + `/[A-Za-z0-9_]{1,64}/[0-9a-f]{16}/)?` + BinaryPrefix + `[A-Za-z0-9_]{1,64}(\.exe)?$`)
	long := strings.Repeat("a", 64)
	names := []string{"", "a", "tags", "A_9", long, long + "a", "a.b", "a-b", "..", "a/b", "a.exe", "é"}
	builds := []string{"", "0123456789abcdef", "0123456789abcde", "0123456789abcdef0", "0123456789ABCDEF", "g123456789abcdef"}
	var files []string
	for _, n := range names {
		for _, suffix := range []string{"", ".exe", ".exe.exe", ".EXE", "\n", "/"} {
			top := BinaryPrefix + n + suffix
			files = append(files, top, "/"+top, "./"+top, "x"+top, "yuzu-plugin"+n+suffix)
			for _, dir := range names {
				for _, b := range builds {
					files = append(files, StoreDir+"/"+dir+"/"+b+"/"+top, StoreDir+"/"+dir+"/"+b+top, StoreDir+"//"+dir+"/"+b+"/"+top)
				}
			}
		}
	}
	for _, f := range files {
		if got, want := fileShape(f), re.MatchString(f); got != want {
			t.Errorf("fileShape(%q) = %v, the regexp says %v", f, got, want)
		}
	}
}

func FuzzFileShapeIsTheRegexp(f *testing.F) {
	re := regexp.MustCompile(`^(` + StoreDir + `/[A-Za-z0-9_]{1,64}/[0-9a-f]{16}/)?` + BinaryPrefix + `[A-Za-z0-9_]{1,64}(\.exe)?$`)
	f.Add("store/tags/0123456789abcdef/yuzu-plugin-tags.exe")
	f.Add("yuzu-plugin-tags")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := fileShape(s), re.MatchString(s); got != want {
			t.Errorf("fileShape(%q) = %v, the regexp says %v", s, got, want)
		}
	})
}
