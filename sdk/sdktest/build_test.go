package sdktest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// tinyModule writes a module of its own holding one main package, main.go being src,
// and returns its directory. It is outside the workspace, so go builds it alone.
func tinyModule(t *testing.T, src string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "go.mod"), "module example.com/tiny\n\ngo 1.21\n")
	write(t, filepath.Join(dir, "main.go"), src)
	return dir
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

const (
	goodMain   = "package main\n\nfunc main() {}\n"
	brokenMain = "package main\n\nfunc main() { undefinedThing() }\n"
)

// Under Main a package is built once: the second test to ask gets the first build
// even though the source changed in between (so it was not built again), the binary
// outlives the test that built it, a failure is kept with go's output, and the
// builds are gone once the run ends.
func TestBuildOncePerRun(t *testing.T) {
	if reason := NoGo(); reason != "" {
		t.Skip(reason)
	}
	t.Setenv("GOWORK", "off") // the tiny modules are outside any workspace
	good := tinyModule(t, goodMain)
	broken := tinyModule(t, brokenMain)
	if err := builds.open(); err != nil {
		t.Fatal(err)
	}
	root := builds.dir
	closed := false
	t.Cleanup(func() {
		if !closed {
			builds.close()
		}
	})

	var first, firstFailure string
	t.Run("first", func(t *testing.T) {
		first = Build(t, good)
		firstFailure = fatalOf(t, func(tb testing.TB) { Build(tb, broken) })
	})
	if !strings.Contains(firstFailure, "sdktest: go build "+broken) || !strings.Contains(firstFailure, "undefinedThing") {
		t.Errorf("failed build says %q, want go build's output naming undefinedThing", firstFailure)
	}
	write(t, filepath.Join(good, "main.go"), brokenMain)
	write(t, filepath.Join(broken, "main.go"), goodMain)
	t.Run("second", func(t *testing.T) {
		if got := Build(t, good); got != first {
			t.Errorf("second build of %s is %s, want the first, %s", good, got, first)
		}
		if got := fatalOf(t, func(tb testing.TB) { Build(tb, broken) }); got != firstFailure {
			t.Errorf("second build of the broken package says %q, want the first failure again", got)
		}
	})
	fi, err := os.Stat(first)
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the build is gone after its test: %v", err)
	}
	if runtime.GOOS != "windows" {
		for _, d := range []string{root, filepath.Dir(first)} {
			if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o755 {
				t.Errorf("%s: %v, mode %v, want 0755 so another user can run the build", d, err, fi.Mode())
			}
		}
	}
	builds.close()
	closed = true
	if _, err := os.Stat(root); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after the run the builds are still there (%v)", err)
	}
}

// Without Main every call builds afresh, into the calling test's temporary directory.
func TestBuildWithoutMain(t *testing.T) {
	if reason := NoGo(); reason != "" {
		t.Skip(reason)
	}
	t.Setenv("GOWORK", "off")
	good := tinyModule(t, goodMain)
	var paths []string
	for _, name := range []string{"one", "two"} {
		t.Run(name, func(t *testing.T) {
			bin := Build(t, good)
			if _, err := os.Stat(bin); err != nil {
				t.Fatal(err)
			}
			paths = append(paths, bin)
		})
	}
	if len(paths) != 2 || paths[0] == paths[1] {
		t.Fatalf("builds %q, want two different ones", paths)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s outlived its test (%v)", p, err)
		}
	}
}
