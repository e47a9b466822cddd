// Package proto_test checks that the committed generated code matches the .proto files.
// The generated Go does not live here: buf.gen.yaml writes each package where its
// go_package says, relative to the repository root (yuzu.plugin.v1 inside the SDK), so
// this test regenerates into a scratch root and compares every *.pb.go of the
// repository with it.
package proto_test

import (
	"bufio"
	"bytes"
	"debug/buildinfo"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// toolsBin is where `make tools` installs the pinned generators, relative to this
// package's directory (go test runs a test in its package directory).
const toolsBin = "../.tools/bin"

// versionsFile pins every tool; the generators must be exactly these versions because
// their version is written into each generated file's header.
const versionsFile = "../tools/versions.txt"

// generators are the tools `buf generate` needs (see buf.gen.yaml).
var generators = []string{"buf", "protoc-gen-go", "protoc-gen-go-grpc"}

// TestGeneratedCodeIsCurrent regenerates the Go code into a temporary directory with the
// pinned buf and protoc plugins and compares it byte for byte with the committed files,
// so a .proto edit without `make proto` (or a hand edit of generated code) fails here.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	if runtime.GOOS == "windows" {
		// The Windows leg runs this package under Wine, where the Linux tools
		// `make tools` built cannot run; the Linux leg checks the same files.
		t.Skip("the pinned generators in .tools/bin are host binaries (make tools), not Windows ones: checked by the Linux run")
	}
	bin, err := filepath.Abs(toolsBin)
	if err != nil {
		t.Fatal(err)
	}
	checkPinnedTools(t, bin)

	// buf.gen.yaml writes to "..", so generating with --output <scratch>/proto puts
	// the files under <scratch> exactly as `make proto` puts them under the root.
	out := t.TempDir()
	cmd := exec.Command(filepath.Join(bin, "buf"), "generate", "--output", filepath.Join(out, "proto"))
	// buf finds the local protoc plugins on PATH; put the pinned ones first so a
	// different protoc-gen-go elsewhere on the machine is never used.
	cmd.Env = append(os.Environ(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"BUF_CACHE_DIR="+t.TempDir(),
	)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("buf generate failed: %v\n%s", err, msg)
	}

	generated := generatedFiles(t, out)
	committed := generatedFiles(t, repoRoot)
	if len(generated) == 0 {
		t.Fatal("buf generate produced no *.pb.go files: check buf.gen.yaml")
	}
	for _, name := range generated {
		want, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(repoRoot, name))
		switch {
		case err != nil:
			t.Errorf("%s is generated but not committed (%v): run `make proto`", name, err)
		case !bytes.Equal(got, want):
			t.Errorf("%s is stale (%s): run `make proto` and commit the result", name, firstDifference(got, want))
		}
	}
	fresh := map[string]bool{}
	for _, name := range generated {
		fresh[name] = true
	}
	for _, name := range committed {
		if !fresh[name] {
			t.Errorf("%s is committed but no .proto file generates it any more: delete it", name)
		}
	}
}

// checkPinnedTools fails the test unless every generator in bin is the pinned version:
// an older protoc-gen-go writes different code, and a missing tool is a setup problem
// with a one-command fix.
func checkPinnedTools(t *testing.T, bin string) {
	t.Helper()
	pins := readPins(t)
	for _, name := range generators {
		pin, ok := pins[name]
		if !ok {
			t.Fatalf("%s pins no version for %s", versionsFile, name)
		}
		path := filepath.Join(bin, name)
		info, err := buildinfo.ReadFile(path)
		if err != nil {
			t.Fatalf("%s is missing or unreadable (%v): run `make tools`", path, err)
		}
		if info.Path != pin.pkg || info.Main.Version != pin.version {
			t.Fatalf("%s is %s %s, but %s pins %s %s: run `make tools`",
				path, info.Path, info.Main.Version, versionsFile, pin.pkg, pin.version)
		}
	}
}

type pin struct{ pkg, version string }

// readPins parses tools/versions.txt: "name package version" per line, # comments.
func readPins(t *testing.T) map[string]pin {
	t.Helper()
	f, err := os.Open(versionsFile)
	if err != nil {
		t.Fatalf("cannot read the tool pins: %v", err)
	}
	defer f.Close()
	pins := map[string]pin{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) != 3 {
			t.Fatalf("%s: malformed line %q", versionsFile, sc.Text())
		}
		pins[fields[0]] = pin{pkg: fields[1], version: fields[2]}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return pins
}

// repoRoot is the repository root, relative to this package's directory.
const repoRoot = ".."

// skipDirs are never searched for generated files: build outputs, tool downloads and
// test inputs.
var skipDirs = map[string]bool{".git": true, ".tools": true, ".cache": true, "bin": true, "testdata": true, "node_modules": true}

// generatedFiles lists the *.pb.go files under root, as slash paths relative to root.
func generatedFiles(t *testing.T, root string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && skipDirs[d.Name()] {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".pb.go") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return names
}

// firstDifference names the first line where the committed and regenerated files part,
// so the failure points at the change instead of just saying "differs".
func firstDifference(committed, regenerated []byte) string {
	a := strings.Split(string(committed), "\n")
	b := strings.Split(string(regenerated), "\n")
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return fmt.Sprintf("line %d: committed %q, regenerated %q", i+1, a[i], b[i])
		}
	}
	return fmt.Sprintf("committed has %d lines, regenerated %d", len(a), len(b))
}
