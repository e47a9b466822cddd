//go:build linux

package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/agent/trust"
)

// Names of the binaries TestMain builds, as they are called inside a plugin dir.
const (
	agentBin    = "yuzu-agent"
	tagsBin     = "yuzu-plugin-tags"
	sleeperBin  = "yuzu-plugin-sleeper"
	crasherBin  = "yuzu-plugin-crasher"
	helloBin    = "yuzu-plugin-hello"
	mismatchBin = "yuzu-plugin-mismatch"
	hostileBin  = "yuzu-plugin-hostile"
	hogBin      = "yuzu-plugin-hog"
	// testserverBin is the test fleet server's console, not a plugin.
	testserverBin = "yuzu-testserver"
)

// shipped lists the plugins `make build` ships (every plugin-NAME module), by name.
var shipped []string

// builds maps each binary name to the package it is built from, relative to the
// repository root.
var builds = map[string]string{
	agentBin:    "./agent/cmd/yuzu-agent",
	tagsBin:     "./plugin-tags",
	sleeperBin:  "./integration/testplugins/sleeper",
	crasherBin:  "./integration/testplugins/crasher",
	helloBin:    "./sdk/examples/hello",
	mismatchBin: "./integration/testplugins/mismatch",
	hostileBin:  "./integration/testplugins/hostile",
	hogBin:      "./integration/testplugins/hog",

	testserverBin: "./integration/cmd/yuzu-testserver",
}

// built describes the binaries of this run. binDir also holds a catalog listing every
// plugin binary in it.
var built struct {
	root   string // repository root
	binDir string
	sums   map[string]string // file name -> sha256 hex
}

// defaultParallel is how many tests run at once unless -test.parallel is given. Most
// tests wait on child processes rather than compute, so more than GOMAXPROCS (two
// cores on the build machines) keeps the whole run short.
const defaultParallel = 6

func TestMain(m *testing.M) {
	if os.Getenv(recordedServerEnv) != "" {
		// The test binary was started as a killable fleet server
		// (TestFleetServerKilled).
		os.Exit(recordedServer())
	}
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", fmt.Sprint(defaultParallel))
	}
	// A machine without Go (the cgroup v2 virtual machine of scripts/test-cgroup2.sh)
	// runs this test binary on binaries built beforehand: YUZU_INTEGRATION_BUILD_ONLY=1
	// with YUZU_INTEGRATION_BIN=DIR builds them into DIR and exits, and
	// YUZU_INTEGRATION_BIN=DIR alone uses what DIR holds.
	if dir := os.Getenv(binEnv); dir != "" {
		if os.Getenv(buildOnlyEnv) == "1" {
			if err := buildAll(dir); err != nil {
				fmt.Fprintln(os.Stderr, "integration: building the binaries failed:", err)
				os.Exit(1)
			}
			os.Exit(0)
		}
		if err := usePrebuilt(dir); err != nil {
			fmt.Fprintln(os.Stderr, "integration: the binaries in", binEnv+"="+dir+":", err)
			os.Exit(1)
		}
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "yuzu-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		os.Exit(1)
	}
	code := 1
	if err := buildAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, "integration: building the binaries failed:", err)
	} else {
		code = m.Run()
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// The environment of a run on binaries built beforehand (TestMain).
const (
	binEnv       = "YUZU_INTEGRATION_BIN"
	buildOnlyEnv = "YUZU_INTEGRATION_BUILD_ONLY"
)

// usePrebuilt takes the binaries buildAll left in dir: every name of builds that is
// there (a test of a missing one fails in makePluginDir, by name). Tests that need the
// repository (built.root) cannot run this way.
func usePrebuilt(dir string) error {
	built.binDir, built.sums = dir, map[string]string{}
	for n := range builds {
		sum, err := fileSHA256(filepath.Join(dir, n))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		built.sums[n] = sum
	}
	if _, ok := built.sums[agentBin]; !ok {
		return fmt.Errorf("no %s", agentBin)
	}
	return nil
}

// buildAll builds every binary into dir with one `go build` (the workspace resolves
// the sibling modules), names them as the agent expects, and writes their catalog.
func buildAll(dir string) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	root := filepath.Dir(wd)
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		return fmt.Errorf("expected the repository root (with go.work) above %s: %w", wd, err)
	}
	built.root, built.binDir = root, dir
	// Every shipped plugin (a plugin-NAME module at the root) is built too, so a new
	// plugin is covered by the tests over all shipped plugins without a change here.
	mods, _ := filepath.Glob(filepath.Join(root, "plugin-*", "main.go"))
	for _, m := range mods {
		name := strings.TrimPrefix(filepath.Base(filepath.Dir(m)), "plugin-")
		builds["yuzu-plugin-"+name] = "./plugin-" + name
		shipped = append(shipped, name)
	}
	slices.Sort(shipped)
	names := slices.Sorted(maps.Keys(builds))
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, n := range names {
		args = append(args, builds[n])
	}
	start := time.Now()
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	fmt.Fprintf(os.Stderr, "integration: built %d binaries in %s\n", len(names), time.Since(start).Round(time.Millisecond))
	built.sums = map[string]string{}
	plugins := map[string]string{}
	for _, n := range names {
		out := filepath.Join(dir, filepath.Base(builds[n]))
		final := filepath.Join(dir, n)
		if out != final {
			if err := os.Rename(out, final); err != nil {
				return err
			}
		}
		if err := os.Chmod(final, 0o755); err != nil {
			return err
		}
		sum, err := fileSHA256(final)
		if err != nil {
			return err
		}
		built.sums[n] = sum
		if n != agentBin && n != testserverBin {
			plugins[n] = sum
		}
	}
	return os.WriteFile(trust.Path(dir), catalogOf(plugins), 0o644)
}

// catalogOf is a plugin catalog listing binaries at the top of a plugin dir (file name
// -> hex SHA-256), pinned by checksum as `plugins pin` and make build record them.
func catalogOf(files map[string]string) []byte {
	c := &trust.Catalog{Plugins: map[string]*trust.Entry{}}
	for file, sum := range files {
		name, _ := trust.PluginName(file)
		c.Plugins[name] = &trust.Entry{File: file, SHA256: sum}
	}
	return c.Marshal()
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// binPath returns the path of a built binary.
func binPath(name string) string { return filepath.Join(built.binDir, name) }

// pluginDir makes a fresh plugin dir holding the named plugin binaries (file names
// such as tagsBin) and a catalog listing them. The binaries are hard links to
// the built ones: a test that changes a binary's bytes or mode must use
// copyPluginDir instead, or it would change every other test's binary too.
func pluginDir(t testing.TB, names ...string) string {
	t.Helper()
	return makePluginDir(t, false, names...)
}

// copyPluginDir is pluginDir with private copies of the binaries.
func copyPluginDir(t testing.TB, names ...string) string {
	t.Helper()
	return makePluginDir(t, true, names...)
}

func makePluginDir(t testing.TB, copyFiles bool, names ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "plugins")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, n := range names {
		sum, ok := built.sums[n]
		if !ok {
			t.Fatalf("no built binary %s", n)
		}
		src, dst := binPath(n), filepath.Join(dir, n)
		var err error
		if copyFiles {
			err = copyFile(src, dst, 0o755)
		} else if err = os.Link(src, dst); err != nil {
			err = copyFile(src, dst, 0o755) // another file system: copy
		}
		if err != nil {
			t.Fatal(err)
		}
		listed[n] = sum
	}
	writeFile(t, trust.Path(dir), string(catalogOf(listed)), 0o644)
	return dir
}

func copyFile(src, dst string, mode os.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.WriteFile(dst, data, mode); err != nil {
		return err
	}
	return os.Chmod(dst, mode) // WriteFile's mode is filtered by the umask
}

func writeFile(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// agentTimeout bounds every agent process a test runs; none should come near it.
const agentTimeout = 90 * time.Second

// run is the outcome of one agent process.
type run struct {
	stdout, stderr string
	code           int
}

func (r run) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
}

// baseEnv is the environment every agent process starts from: nothing of the test's
// own environment leaks in (a YUZU_* variable set by whoever runs the tests would
// change what the agent does).
func baseEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "LANG=C.UTF-8"}
}

// runAgent runs the agent with args and env (nil: baseEnv) and waits for it.
func runAgent(t testing.TB, env []string, args ...string) run {
	t.Helper()
	return runAgentAttr(t, env, nil, args...)
}

// runAgentAttr is runAgent with the agent's process attributes (nil: none), such as
// the cgroup it is forked into.
func runAgentAttr(t testing.TB, env []string, attr *syscall.SysProcAttr, args ...string) run {
	t.Helper()
	if env == nil {
		env = baseEnv()
	}
	ctx, cancel := context.WithTimeout(context.Background(), agentTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath(agentBin), args...)
	cmd.Env = env
	cmd.SysProcAttr = attr
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	r := run{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr) && exitErr.Exited():
		r.code = exitErr.ExitCode()
	default:
		t.Fatalf("yuzu-agent %s: %v\n%s", strings.Join(args, " "), err, r)
	}
	return r
}

// world is one plugin dir and one data dir, as one installed agent sees them.
type world struct {
	t         testing.TB
	pluginDir string
	dataDir   string
}

// newWorld makes a plugin dir holding the named plugins and an empty data dir.
func newWorld(t testing.TB, plugins ...string) *world {
	t.Helper()
	w := &world{t: t, pluginDir: pluginDir(t, plugins...), dataDir: filepath.Join(t.TempDir(), "data")}
	if err := os.Mkdir(w.dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

// exec runs `yuzu-agent --plugin-dir P --data-dir D exec args...`.
func (w *world) exec(args ...string) run {
	w.t.Helper()
	return runAgent(w.t, nil, append([]string{"--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "exec"}, args...)...)
}

// expect runs exec and fails the test unless stdout and the exit code are exactly
// as given.
func (w *world) expect(wantStdout string, wantCode int, args ...string) run {
	w.t.Helper()
	r := w.exec(args...)
	if r.stdout != wantStdout || r.code != wantCode {
		w.t.Errorf("exec %s:\n got stdout %q exit %d\nwant stdout %q exit %d\nstderr:\n%s",
			strings.Join(args, " "), r.stdout, r.code, wantStdout, wantCode, r.stderr)
	}
	return r
}

// Capture-format trailers.
const (
	undeclared = "[result_status] UNDECLARED / UNKNOWN\n"
	rc1        = "[rc] 1\n"
)

// agentError is the capture text of a failure of the agent rather than the plugin.
func agentError(msg string) string { return "error|" + msg + "\n" + undeclared + rc1 }

// lockedBuffer collects log output written from several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
