//go:build linux

// Package wine is the end-to-end half of the Windows leg (docs/windows.md): a Linux
// test that builds the Windows yuzu-agent.exe, every shipped yuzu-plugin-*.exe and the
// test plugins, and drives them under Wine 8.0 the way an operator would, through
// `yuzu-agent.exe exec`, `plugins add` and `run` against a fleet server on Linux
// loopback. `make test-windows` runs it after the Windows unit tests; run alone it
// sets Wine up itself (scripts/wine-setup.sh), and when that cannot be done every
// test skips, saying why.
//
// Everything a test makes lives in a Linux temporary directory, which Windows code
// sees through drive Z: (Z:\tmp\...), so the Windows side never has to remove a
// directory tree (Wine 8.0's os.RemoveAll cannot).
package wine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/yuzugo/yuzu/agent/trust"
	"time"
)

// Names of the Windows binaries, as they are called in a plugin dir.
const (
	agentExe    = "yuzu-agent.exe"
	tagsExe     = "yuzu-plugin-tags.exe"
	fsExe       = "yuzu-plugin-filesystem.exe"
	firewallExe = "yuzu-plugin-firewall.exe"
	sleeperExe  = "yuzu-plugin-sleeper.exe"
	crasherExe  = "yuzu-plugin-crasher.exe"
	hostileExe  = "yuzu-plugin-hostile.exe"
	hogExe      = "yuzu-plugin-hog.exe"
)

// The Wine installation the Windows leg uses (scripts/wine.sh).
const (
	wine64     = "/usr/lib/wine/wine64"
	wineserver = "/usr/lib/wine/wineserver"
)

var env struct {
	root    string // repository root
	wineDir string // .cache/wine unless YUZU_WINE_DIR says otherwise
	bin     string // the built .exe files, by name
	sums    map[string]string
	fixture string // fixtures: versioned.exe, signed.exe, tampered.exe, unsigned.exe
	// skip is why no test can run (Wine could not be set up), or "".
	skip string
}

func TestMain(m *testing.M) {
	code, err := setUp(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration/wine:", err)
	}
	os.Exit(code)
}

func setUp(m *testing.M) (int, error) {
	wd, err := os.Getwd()
	if err != nil {
		return 1, err
	}
	env.root = filepath.Dir(filepath.Dir(wd))
	if _, err := os.Stat(filepath.Join(env.root, "go.work")); err != nil {
		return 1, fmt.Errorf("expected the repository root (with go.work) two levels above %s: %w", wd, err)
	}
	env.wineDir = os.Getenv("YUZU_WINE_DIR")
	if env.wineDir == "" {
		env.wineDir = filepath.Join(env.root, ".cache", "wine")
	}
	tmp, err := os.MkdirTemp("", "yuzu-wine-")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(tmp)
	// Readable by the Windows side whatever the umask.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return 1, err
	}
	// The binaries are built into the Wine directory, where they stay: go build
	// links again only what changed since the last run.
	env.bin = filepath.Join(env.wineDir, "exe")
	env.fixture = filepath.Join(tmp, "fixtures")

	// scripts/test-windows.sh builds the Windows binaries through this binary while
	// Wine is being set up (YUZU_WINE_BUILD_ONLY), then runs it with Wine set up and a
	// server running; alone, this package does everything itself.
	if os.Getenv("YUZU_WINE_BUILD_ONLY") == "1" {
		if err := buildAll(); err != nil {
			return 1, fmt.Errorf("building the Windows binaries failed: %w", err)
		}
		return 0, nil
	}
	if os.Getenv("YUZU_WINE_SERVER") != "running" {
		if reason := setUpWine(); reason != "" {
			env.skip = reason
			fmt.Fprintln(os.Stderr, "integration/wine: every test skips:", reason)
			return m.Run(), nil
		}
		defer stopWine()
	}
	if err := buildAll(); err != nil {
		return 1, fmt.Errorf("building the Windows binaries failed: %w", err)
	}
	if err := makeFixtures(); err != nil {
		return 1, fmt.Errorf("making the fixtures failed: %w", err)
	}
	defer removePrivateCopies()
	return m.Run(), nil
}

// removePrivateCopies removes, from the Linux side, the private plugin copies the
// agents of the run left in the prefix's Temp, whose os.RemoveAll fails under Wine 8.0
// (docs/windows.md; at 14 MB each a run would leave a gigabyte). Only copies of this
// package's binaries are touched: the Windows unit tests run at the same time in the
// same prefix, and their supervisor tests make private copies of their own.
func removePrivateCopies() {
	for _, dir := range privateCopies("") {
		_ = os.RemoveAll(dir)
	}
}

// privateCopies lists the private copy directories in the prefix's Temp that hold one
// of this package's binaries (name, or any of them for "").
func privateCopies(name string) []string {
	var out []string
	dirs, _ := filepath.Glob(filepath.Join(env.wineDir, "prefix", "drive_c", "users", "*", "Temp", "yuzu-plugin-*"))
	for _, dir := range dirs {
		for n := range builds {
			if (name == "" || n == name) && fileExists(filepath.Join(dir, n)) {
				out = append(out, dir)
				break
			}
		}
	}
	return out
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// setUpWine runs the Wine set-up and starts one wine server for the run, its services
// on /dev/null (see scripts/test-windows.sh for why). It returns why Wine cannot be
// used, or "".
func setUpWine() string {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(env.root, "scripts", "wine-setup.sh"))
	cmd.Env = append(os.Environ(), "YUZU_WINE_DIR="+env.wineDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Sprintf("Wine could not be set up (scripts/wine-setup.sh: %v): %s", err, lastLines(string(out), 5))
	}
	if err := wineCmd(ctx, wineserver, "-p").Run(); err != nil {
		return fmt.Sprintf("wineserver -p: %v", err)
	}
	if err := wineCmd(ctx, wine64, "wineboot").Run(); err != nil {
		return fmt.Sprintf("starting the Wine services: %v", err)
	}
	return ""
}

func stopWine() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = wineCmd(ctx, wineserver, "-k").Run()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}

// wineEnv is the environment of every Wine process: the Windows leg's prefix, Wine's
// messages off, the XDG directories inside it so nothing lands in $HOME, no display.
func wineEnv() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.TempDir(),
		"LANG=C.UTF-8",
		"WINEPREFIX=" + filepath.Join(env.wineDir, "prefix"),
		"WINEDEBUG=-all",
		"XDG_DATA_HOME=" + filepath.Join(env.wineDir, "xdg", "data"),
		"XDG_CONFIG_HOME=" + filepath.Join(env.wineDir, "xdg", "config"),
	}
}

// wineCmd is a Wine command with no input and no output (set-up commands).
func wineCmd(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = wineEnv()
	return cmd
}

// needWine skips the test when Wine could not be set up, saying why.
func needWine(t testing.TB) {
	t.Helper()
	if env.skip != "" {
		t.Skip(env.skip)
	}
}

// updateVersions are the agent versions the self-update test builds.
var updateVersions = []string{"0.9.0", "1.0.0"}

// builds maps each binary to the package it is built from, relative to the root.
var builds = map[string]string{
	agentExe:   "./agent/cmd/yuzu-agent",
	sleeperExe: "./integration/testplugins/sleeper",
	crasherExe: "./integration/testplugins/crasher",
	hostileExe: "./integration/testplugins/hostile",
	hogExe:     "./integration/testplugins/hog",
}

// buildAll builds every Windows binary with one go build, as `make build` would for
// GOOS=windows (symbols stripped), without the test-only overlay the unit tests use:
// these are the binaries a Windows machine would run. The compiled packages come from
// the build cache `make cross` fills for windows/amd64 (same flags), and a binary
// already in env.bin and up to date is not linked again.
func buildAll() error {
	mods, _ := filepath.Glob(filepath.Join(env.root, "plugin-*", "main.go"))
	for _, m := range mods {
		name := strings.TrimPrefix(filepath.Base(filepath.Dir(m)), "plugin-")
		builds["yuzu-plugin-"+name+".exe"] = "./plugin-" + name
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range builds {
			if !yield(n) {
				return
			}
		}
	})
	if err := os.MkdirAll(env.bin, 0o755); err != nil {
		return err
	}
	args := []string{"build", "-ldflags=-s -w", "-o", env.bin + "/"}
	for _, n := range names {
		args = append(args, builds[n])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = env.root
	cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	// The agent at two versions, for the self-update test.
	for _, v := range updateVersions {
		vargs := []string{"build", "-trimpath", "-ldflags=-s -w -X github.com/yuzugo/yuzu/agent/internal/cli.Version=" + v, "-o", filepath.Join(env.bin, "yuzu-agent-"+v+".exe"), "./agent/cmd/yuzu-agent"}
		vcmd := exec.CommandContext(ctx, "go", vargs...)
		vcmd.Dir = env.root
		vcmd.Env = cmd.Env
		if out, err := vcmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go %s: %v\n%s", strings.Join(vargs, " "), err, out)
		}
	}
	fmt.Fprintf(os.Stderr, "integration/wine: built %d Windows binaries in %s\n", len(names)+len(updateVersions), time.Since(start).Round(time.Millisecond))
	env.sums = map[string]string{}
	for _, n := range names {
		out := filepath.Join(env.bin, filepath.Base(builds[n])+".exe")
		final := filepath.Join(env.bin, n)
		// A second name for go build's output, which stays for its next up-to-date check.
		if out != final {
			if err := os.Remove(final); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			if err := os.Link(out, final); err != nil {
				return err
			}
		}
		sum, err := fileSHA256(final)
		if err != nil {
			return err
		}
		env.sums[n] = sum
	}
	return nil
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

// winPath is how Windows code names a Linux path: through drive Z:, the root.
func winPath(p string) string { return `Z:` + strings.ReplaceAll(p, "/", `\`) }

// run is the outcome of one Windows process.
type run struct {
	stdout, stderr string
	code           int
}

func (r run) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
}

// exeTimeout bounds every Windows process a test runs.
const exeTimeout = 2 * time.Minute

// runExe runs a Windows binary under Wine with extra environment entries and waits.
func runExe(t testing.TB, extraEnv []string, exe string, args ...string) run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), exeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, wine64, append([]string{exe}, args...)...)
	cmd.Env = append(wineEnv(), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	r := run{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr) && exitErr.Exited():
		r.code = exitErr.ExitCode()
	default:
		t.Fatalf("%s %s: %v\n%s", filepath.Base(exe), strings.Join(args, " "), err, r)
	}
	return r
}

// world is one plugin dir and one data dir of an installed Windows agent.
type world struct {
	t                  testing.TB
	pluginDir, dataDir string
}

// newWorld makes a plugin dir with copies of the named plugins and their catalog,
// and an empty data dir.
func newWorld(t testing.TB, plugins ...string) *world {
	t.Helper()
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, pluginDir: filepath.Join(base, "plugins"), dataDir: filepath.Join(base, "data")}
	for _, d := range []string{w.pluginDir, w.dataDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cat := &trust.Catalog{Plugins: map[string]*trust.Entry{}}
	for _, n := range plugins {
		copyFile(t, filepath.Join(env.bin, n), filepath.Join(w.pluginDir, n))
		name, _ := trust.PluginName(n)
		cat.Plugins[name] = &trust.Entry{File: n, SHA256: env.sums[n]}
	}
	writeFile(t, trust.Path(w.pluginDir), string(cat.Marshal()))
	return w
}

// agent runs yuzu-agent.exe with the world's dirs, then args.
func (w *world) agent(args ...string) run {
	w.t.Helper()
	return runExe(w.t, nil, filepath.Join(env.bin, agentExe),
		append([]string{"--plugin-dir", winPath(w.pluginDir), "--data-dir", winPath(w.dataDir)}, args...)...)
}

// exec runs `yuzu-agent.exe exec args...`.
func (w *world) exec(args ...string) run {
	w.t.Helper()
	return w.agent(append([]string{"exec"}, args...)...)
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

const (
	undeclared = "[result_status] UNDECLARED / UNKNOWN\n"
	rc1        = "[rc] 1\n"
)

func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dst, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
