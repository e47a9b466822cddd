package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/yuzugo/yuzu/sdk/subprocess"
)

// Tests of the pure verdicts and parsers of get_signature and get_version_info,
// which run on every system whatever system they serve.

// lookToolCapture reads a tool run from testdata: header lines "# key=value" (exit,
// reason, ran, timed_out, truncated, want, and source or note saying where the run
// comes from), then the output exactly as the tool wrote it.
func lookToolCapture(t *testing.T, path string) (subprocess.Result, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res := subprocess.Result{ToolRan: true, Reason: subprocess.ReasonExited}
	var want string
	for bytes.HasPrefix(b, []byte("# ")) {
		line, rest, _ := bytes.Cut(b, []byte("\n"))
		b = rest
		k, v, _ := strings.Cut(string(line[2:]), "=")
		switch k {
		case "exit":
			res.ExitCode, err = strconv.Atoi(v)
		case "reason":
			res.Reason = subprocess.Reason(v)
		case "ran":
			res.ToolRan, err = strconv.ParseBool(v)
		case "timed_out":
			res.TimedOut, err = strconv.ParseBool(v)
		case "truncated":
			res.OutputTruncated, err = strconv.ParseBool(v)
		case "want":
			want = v
		case "source", "note":
			// Where a real run was published, or why a run was written by hand.
		default:
			err = fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	res.Output = b
	return res, want
}

func TestCodesignStatus(t *testing.T) {
	files, _ := filepath.Glob("testdata/codesign/*.txt")
	if len(files) < 20 {
		t.Fatalf("only %d captures", len(files))
	}
	for _, f := range files {
		res, want := lookToolCapture(t, f)
		var err error
		if !res.ToolRan {
			err = errors.New("fork/exec /usr/bin/codesign: no such file or directory")
		}
		if got := codesignStatus(res, err); got != want {
			t.Errorf("%s: %s, want %s", f, got, want)
		}
	}
}

func TestPlutilValue(t *testing.T) {
	files, _ := filepath.Glob("testdata/plutil/*.txt")
	if len(files) < 8 {
		t.Fatalf("only %d captures", len(files))
	}
	for _, f := range files {
		res, want := lookToolCapture(t, f)
		var err error
		if !res.ToolRan {
			err = errors.New("fork/exec /usr/bin/plutil: no such file or directory")
		}
		got, ok := plutilValue(res, err)
		if !ok {
			got = "-"
		}
		if got != want {
			t.Errorf("%s: %q, want %q", f, got, want)
		}
	}
}

func TestPlistFor(t *testing.T) {
	for _, c := range []struct {
		path  string
		isDir bool
		want  string
	}{
		{"/Applications/Safari.app", true, "/Applications/Safari.app/Contents/Info.plist"},
		{"/Applications/Safari.app", false, ""},
		{"/Applications/Safari.App", true, ""},
		{"/Applications/Safari.app/Contents/Info.plist", false, "/Applications/Safari.app/Contents/Info.plist"},
		{"/tmp/info.plist", false, ""},
		{"/bin/ls", false, ""},
		{"/Applications", true, ""},
	} {
		got, ok := plistFor(c.path, c.isDir)
		// Joined with the separator of the system the test runs on.
		if ok != (c.want != "") || filepath.ToSlash(got) != c.want {
			t.Errorf("plistFor(%q, %v) = %q, %v; want %q", c.path, c.isDir, got, ok, c.want)
		}
	}
}

func TestWinTrustStatus(t *testing.T) {
	for code, want := range map[uint32]string{
		0:          "valid",
		0x800B0100: "unsigned",
		0x800B0111: "distrusted",
		0x800B0004: "untrusted",
		0x80092026: "security_settings_blocked",
		0x800B0101: "error_0x800b0101",
		0x80096010: "error_0x80096010",
		0x00000005: "error_0x00000005",
	} {
		if got := winTrustStatus(code); got != want {
			t.Errorf("%#x: %s, want %s", code, got, want)
		}
	}
}
