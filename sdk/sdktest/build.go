package sdktest

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Build compiles the main package at pkg (a directory relative to the test's working
// directory, as `go build` takes it, or an import path) and returns the binary.
//
// When the test binary's TestMain runs its tests through Main, each package is built
// once for the whole run: every test asking for it gets the same binary, which must
// therefore not be changed (copy it first). Those binaries sit in a directory everyone
// may read and enter, so a test can run the plugin as another user, and Main removes
// them when the tests end. Without Main, each call builds afresh into the test's own
// temporary directory.
//
// The build uses the go command on PATH (go test puts its own toolchain first) in the
// test's environment, so GOFLAGS, GOWORK, GOTOOLCHAIN, CGO_ENABLED and the rest apply to
// it as they did to the test. A failed build fails the test with go's output; under
// Main every later test asking for the same package fails with it too, rather than
// building again. Without a go command on PATH the test is skipped, saying so: a
// cross-compiled test binary (the Windows leg's, run under Wine) has none.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	if reason := NoGo(); reason != "" {
		t.Skipf("sdktest: cannot build %s: %s", pkg, reason)
	}
	dir, target, err := resolve(pkg)
	if err != nil {
		t.Fatalf("sdktest: go build %s: %v", pkg, err)
	}
	b := builds.get(target)
	if b == nil {
		out := filepath.Join(t.TempDir(), binaryName(target))
		if err := goBuild(dir, target, pkg, out); err != nil {
			t.Fatalf("sdktest: %v", err)
		}
		return out
	}
	b.once.Do(func() { b.path, b.err = builds.build(b.seq, dir, target, pkg) })
	if b.err != nil {
		t.Fatalf("sdktest: %v", b.err)
	}
	return b.path
}

// Main runs the tests of m with Build's cache, one build of each package for the
// whole run, and removes the builds when the tests end. Call it from TestMain, after
// anything the binary does when it is started as a helper process rather than to
// test; TestMain may simply return after it, and the test binary then exits with the
// tests' status.
func Main(m *testing.M) {
	if err := builds.open(); err != nil {
		fmt.Fprintln(os.Stderr, "sdktest:", err)
		os.Exit(1)
	}
	defer builds.close()
	m.Run()
}

// NoGo says why this test binary cannot run the go command, or "" when it can.
func NoGo() string {
	if _, err := exec.LookPath("go"); err != nil {
		return fmt.Sprintf("no go command on PATH (%v), as in a cross-compiled test binary such as the Windows leg's under Wine", err)
	}
	return ""
}

// builds is Build's cache while Main runs the tests.
var builds buildCache

type buildCache struct {
	mu    sync.Mutex
	dir   string // "" when Main is not running: no caching
	byPkg map[string]*build
}

// build is one package's build under Main, made by the first test that asks.
type build struct {
	seq  int // names its directory under the cache
	once sync.Once
	path string
	err  error
}

func (c *buildCache) open() error {
	dir, err := os.MkdirTemp("", "sdktest-build-")
	if err != nil {
		return err
	}
	// MkdirTemp makes it 0700; tests that drop privileges must still reach the binary.
	if err := os.Chmod(dir, 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dir, c.byPkg = dir, map[string]*build{}
	return nil
}

func (c *buildCache) close() {
	c.mu.Lock()
	dir := c.dir
	c.dir, c.byPkg = "", nil
	c.mu.Unlock()
	_ = os.RemoveAll(dir)
}

// get returns target's entry, made on first use, or nil when nothing is cached.
func (c *buildCache) get(target string) *build {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dir == "" {
		return nil
	}
	b := c.byPkg[target]
	if b == nil {
		b = &build{seq: len(c.byPkg)}
		c.byPkg[target] = b
	}
	return b
}

// build compiles target into a directory of its own under the cache, so that two
// packages whose directories share a name do not collide.
func (c *buildCache) build(seq int, dir, target, pkg string) (string, error) {
	c.mu.Lock()
	root := c.dir
	c.mu.Unlock()
	sub := filepath.Join(root, strconv.Itoa(seq))
	if err := os.Mkdir(sub, 0o755); err != nil {
		return "", fmt.Errorf("go build %s: %v", pkg, err)
	}
	if err := os.Chmod(sub, 0o755); err != nil { // whatever the umask
		return "", fmt.Errorf("go build %s: %v", pkg, err)
	}
	out := filepath.Join(sub, binaryName(target))
	return out, goBuild(dir, target, pkg, out)
}

// resolve turns pkg into what go build is run on and where. A relative directory is
// made absolute and built from inside itself, so a test that changed its working
// directory since still builds what it named, and the cache knows it by one name. An
// import path is built from the working directory, whose module resolves it.
func resolve(pkg string) (dir, target string, err error) {
	if pkg == "." || pkg == ".." || strings.HasPrefix(pkg, "./") || strings.HasPrefix(pkg, "../") || filepath.IsAbs(pkg) {
		abs, err := filepath.Abs(pkg)
		if err != nil {
			return "", "", err
		}
		return abs, abs, nil
	}
	return "", pkg, nil
}

// binaryName is the name go build would give target's binary.
func binaryName(target string) string {
	name := path.Base(filepath.ToSlash(target))
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	return name
}

// goBuild runs go build of target in dir ("" for the working directory) into out; pkg
// is the name the test gave, for the error.
func goBuild(dir, target, pkg, out string) error {
	arg := target
	if dir != "" {
		arg = "."
	}
	cmd := exec.Command("go", "build", "-o", out, arg)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return nil
}
