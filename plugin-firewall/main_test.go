package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// pluginBin is the plugin binary built once for the tests that run it inside a
// network namespace, in a directory everyone may read so it can run as nobody.
var pluginBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "yuzu-plugin-firewall-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := exec.LookPath("go"); err != nil {
		// Only the Linux tests run the plugin as a child; the Windows leg's test
		// binary, under Wine, has no go command to build it with.
		fmt.Fprintln(os.Stderr, "plugin-firewall tests: the plugin binary is not built, no go command on PATH:", err)
		return m.Run()
	}
	pluginBin = filepath.Join(dir, "yuzu-plugin-firewall")
	if out, err := exec.Command("go", "build", "-o", pluginBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	removeStaleTestbeds()
	return m.Run()
}
