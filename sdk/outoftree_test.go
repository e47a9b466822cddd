package sdk_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutOfTreePluginBuilds builds sdk/examples/hello the way a third party would, with
// the go.mod the README gives: its own module, outside the workspace, requiring only
// the SDK (through a replace, until the SDK is published), and runs its sdktest tests
// there. A dependency of the SDK on another module of this repository would make
// `go mod tidy` fail here.
func TestOutOfTreePluginBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module from scratch; skipped in -short mode")
	}
	if _, err := exec.LookPath("go"); err != nil {
		// A cross-compiled test binary (the Windows leg's, under Wine) has none.
		t.Skip("builds a module with the go command, which is not on PATH:", err)
	}
	sdkDir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join("examples", "hello")
	for _, name := range []string{"main.go", "main_test.go", filepath.Join("definitions", "hello.yaml")} {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gomod := "module example.com/yuzu-plugin-hello\n\ngo 1.26.0\n\nrequire github.com/yuzugo/yuzu/sdk v0.0.0\n\n" +
		"replace github.com/yuzugo/yuzu/sdk => " + sdkDir + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("mod", "tidy")
	run("build", "-o", "yuzu-plugin-hello", ".")
	run("vet", "./...")
	run("test", "-count=1", "./...")
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, "github.com/yuzugo/yuzu/") && !strings.Contains(line, "github.com/yuzugo/yuzu/sdk") {
			t.Errorf("the out-of-tree go.mod needs another module of this repository: %s", line)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "yuzu-plugin-hello")); err != nil || fi.Size() == 0 {
		t.Fatalf("no binary built: %v", err)
	}
}
