package cli

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yuzugo/yuzu/agent/internal/diagnostics"
)

func TestDiagnosticsBundle(t *testing.T) {
	dir := t.TempDir()
	secretKey := filepath.Join(dir, "client.key")
	if err := os.WriteFile(secretKey, []byte("-----BEGIN PRIVATE KEY-----KEYMATERIAL"), 0o600); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "agent.log")
	if err := os.WriteFile(logFile, []byte("old line\n"+
		`2026-12-06T10:00:00.000Z [DEBUG] yuzu-agent: command: id=c1 plugin=tags action=set params=key,value status=OK values="key=\"env\" value=\"t0psecret \\\"quoted\\\"\""`+"\n"+
		`{"@level":"debug","@message":"command","action":"set","values":"key=\"k\" value=\"js0nsecret\""}`+"\n"+
		"last line token=s3cret\x1b[31m\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plugins := t.TempDir()
	if err := os.Symlink(secretKey, filepath.Join(plugins, "yuzu-plugin-link")); err != nil {
		t.Fatal(err)
	}
	cfgFile := writeConfig(t, "enrollment-token: s3cret\nclient-key: "+secretKey+"\nlog-file: "+logFile+"\n")
	out := filepath.Join(dir, "bundle.tar.gz")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"--config", cfgFile, "--data-dir", t.TempDir(), "--plugin-dir", plugins, "diagnostics", "--out", out}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	got := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		got[h.Name] = string(b)
	}
	for _, name := range []string{"version.txt", "config.txt", "status.txt", "plugins.txt", "log.txt", "journal.txt", "certificate.txt"} {
		if _, ok := got[diagnostics.Dir+"/"+name]; !ok {
			t.Errorf("bundle lacks %s", name)
		}
	}
	all := strings.Join(func() []string {
		var s []string
		for _, v := range got {
			s = append(s, v)
		}
		return s
	}(), "\n")
	for _, bad := range []string{"s3cret", "KEYMATERIAL", "\x1b", "t0psecret", "quoted", "js0nsecret"} {
		if strings.Contains(all, bad) {
			t.Errorf("bundle holds %q", bad)
		}
	}
	if !strings.Contains(got[diagnostics.Dir+"/log.txt"], "last line token="+redacted) ||
		!strings.Contains(got[diagnostics.Dir+"/log.txt"], `status=OK values="`+redacted+`"`) || !strings.Contains(got[diagnostics.Dir+"/log.txt"], `"values":"`+redacted+`"}`) {
		t.Errorf("log.txt = %q", got[diagnostics.Dir+"/log.txt"])
	}
	if fi, err := os.Lstat(filepath.Join(plugins, "yuzu-plugin-link")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Log("os.Symlink made no link (Wine 8.0): the link listing is not checked")
	} else if !strings.Contains(got[diagnostics.Dir+"/plugins.txt"], "yuzu-plugin-link\tL") {
		t.Errorf("plugins.txt does not name the link as a link:\n%s", got[diagnostics.Dir+"/plugins.txt"])
	}
	if !strings.Contains(got[diagnostics.Dir+"/status.txt"], "no running agent answers") {
		t.Errorf("status.txt = %q", got[diagnostics.Dir+"/status.txt"])
	}
}
