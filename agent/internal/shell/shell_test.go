package shell

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/definition"
	"github.com/yuzugo/yuzu/sdk/host"
)

func testDeclared() *declared {
	enum := []string{"sha256", "sha1", "md5"}
	m := host.Manifest{Name: "filesystem", Actions: []sdk.Action{
		{Name: "read", Params: []sdk.Parameter{{Name: "path"}, {Name: "offset"}, {Name: "limit"}}},
		{Name: "replace"},
		{Name: "file_hash", Params: []sdk.Parameter{{Name: "path"}, {Name: "algorithm", Enum: enum}}},
	}}
	return &declared{
		plugins:   []string{"filesystem", "firewall", "tags"},
		manifests: map[string]host.Manifest{"filesystem": m},
		defs: []definition.Definition{
			{ID: "device.tags.set", Parameters: []definition.Parameter{{Name: "key"}, {Name: "value"}}},
			{ID: "device.tags.get"},
		},
		formats: []string{"capture", "json"},
	}
}

func TestComplete(t *testing.T) {
	d := testDeclared()
	cases := []struct {
		line    string
		pos     int // -1: the end of line
		want    string
		choices []string
		ok      bool
	}{
		{line: "ta", want: "tags ", ok: true},
		{line: "fi", want: "fi", choices: []string{"filesystem", "firewall"}, ok: true},
		{line: "fil", want: "filesystem ", ok: true},
		{line: "dev", want: "device.tags.", ok: true},
		{line: "device.tags.s", want: "device.tags.set ", ok: true},
		{line: "device.tags.set k", want: "device.tags.set key=", ok: true},
		{line: "device.tags.set key=a ", want: "device.tags.set key=a value=", ok: true},
		{line: "filesystem re", want: "filesystem re", choices: []string{"read", "replace"}, ok: true},
		{line: "filesystem rea", want: "filesystem read ", ok: true},
		{line: "filesystem read path=/x ", want: "filesystem read path=/x ", choices: []string{"limit=", "offset="}, ok: true},
		{line: "filesystem file_hash algorithm=s", want: "filesystem file_hash algorithm=sha", ok: true},
		{line: "filesystem file_hash algorithm=sha2", want: "filesystem file_hash algorithm=sha256 ", ok: true},
		{line: ".d", want: ".describe ", ok: true},
		{line: ".describe t", want: ".describe tags ", ok: true},
		{line: ".output j", want: ".output json ", ok: true},
		// In the middle of a line: the word before the cursor, the rest kept.
		{line: "filesystem rea path=/x", pos: len("filesystem rea"), want: "filesystem read path=/x", ok: true},
		// Nothing to offer: the key is left to the line editor.
		{line: "zz", want: "zz"},
		{line: "tags co", want: "tags co"}, // tags has not answered yet: no actions known
		{line: "filesystem nosuch ", want: "filesystem nosuch "},
		{line: ".quit x", want: ".quit x"},
	}
	for _, c := range cases {
		pos := c.pos
		if pos == 0 {
			pos = len(c.line)
		}
		got, gotPos, choices, ok := d.complete(c.line, pos)
		if got != c.want || ok != c.ok || !reflect.DeepEqual(choices, c.choices) {
			t.Errorf("complete(%q, %d) = %q, %v, %v; want %q, %q, %v", c.line, pos, got, choices, ok, c.want, c.choices, c.ok)
		}
		if wantPos := len(c.want) - (len(c.line) - pos); gotPos != wantPos {
			t.Errorf("complete(%q, %d): cursor at %d, want %d", c.line, pos, gotPos, wantPos)
		}
	}
}

func TestHistory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "data", historyFileName)
	h := loadHistory(path, hclog.NewNullLogger())
	if h.Len() != 0 {
		t.Fatalf("a missing file gave %d lines", h.Len())
	}
	abandon := false
	h.dropped = func() bool { return abandon }
	for _, l := range []string{"tags count ", "tags count", "", " tags set key=secret value=x", "tags get key=env"} {
		h.Add(l)
	}
	abandon = true
	h.Add("tags get key=half")
	if got := []string{h.At(0), h.At(1)}; h.Len() != 2 || !reflect.DeepEqual(got, []string{"tags get key=env", "tags count"}) {
		t.Fatalf("history has %d lines, newest %q", h.Len(), got)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 { // Windows: the data dir's ACL
		t.Errorf("history file mode %v, want 0600", fi.Mode().Perm())
	}
	again := loadHistory(path, hclog.NewNullLogger())
	if again.Len() != 2 || again.At(0) != "tags get key=env" {
		t.Errorf("reloaded history has %d lines", again.Len())
	}

	// Bounded: the oldest lines go (in memory only, which keeps the test quick).
	h = &history{}
	for i := range historyLines + 10 {
		h.Add("tags get key=k" + strings.Repeat("x", i%7) + string(rune('a'+i%26)))
	}
	if h.Len() != historyLines {
		t.Errorf("history holds %d lines, want at most %d", h.Len(), historyLines)
	}
}

func TestHistoryFileRefusedOrFiltered(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, []byte("planted\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, historyFileName)
	if err := os.Symlink(target, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if h := loadHistory(link, hclog.NewNullLogger()); h.Len() != 0 {
		t.Errorf("a history file that is a symbolic link was read: %d lines", h.Len())
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("tags count\n\x1b[2Jevil\nbad \xff\n"+strings.Repeat("y", historyLineMax+1)+"\ntags get key=a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := loadHistory(plain, hclog.NewNullLogger())
	if h.Len() != 2 || h.At(0) != "tags get key=a" || h.At(1) != "tags count" {
		t.Errorf("want only the two printable lines kept, got %d", h.Len())
	}
}
