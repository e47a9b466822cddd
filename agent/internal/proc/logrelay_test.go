package proc

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// What a plugin writes on stderr reaches the agent's log line by line: the SDK's JSON
// lines keep their level and fields, other text is made printable and logged at info,
// at error from a panic on, a long line in pieces, and a last line without a newline
// is not lost.
func TestRelayLog(t *testing.T) {
	var logs bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Name: "p", Level: hclog.Trace, Output: &logs})
	long := strings.Repeat("x", maxLogLine+10)
	in := strings.Join([]string{
		`{"@level":"warn","@message":"disk slow","@timestamp":"t","path":"/a"}`,
		"plain \x1b[31mred\x1b[0m text\r",
		`{"@level":"nonsense","@message":"m"}`,
		"",
		"panic: boom",
		"goroutine 1 [running]:",
		long,
		"no newline at the end",
	}, "\n")
	relayLog(strings.NewReader(in), log)
	lines := strings.Split(strings.TrimRight(logs.String(), "\n"), "\n")
	want := []struct{ level, text string }{
		{"[WARN]", "p: disk slow: path=/a"},
		{"[INFO]", `p: plain \x1b[31mred\x1b[0m text: stream=stderr`},
		{"[INFO]", `p: {"@level":"nonsense","@message":"m"}: stream=stderr`},
		{"[ERROR]", "p: panic: boom: stream=stderr"},
		{"[ERROR]", "p: goroutine 1 [running]:: stream=stderr"},
		{"[ERROR]", "p: " + long[:maxLogLine] + ": stream=stderr"},
		{"[ERROR]", "p: xxxxxxxxxx: stream=stderr"},
		{"[ERROR]", "p: no newline at the end: stream=stderr"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d log lines, want %d", len(lines), len(want))
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w.level) || !strings.HasSuffix(lines[i], w.text) {
			t.Errorf("line %d = %.200q, want level %s and ending %.200q", i, lines[i], w.level, w.text)
		}
	}
}

// Lines split across writes (go-plugin forwards stdout in whatever pieces arrive) come
// out whole, attributed to their stream.
func TestLineLogAcrossWrites(t *testing.T) {
	var logs bytes.Buffer
	w := newLineLog(hclog.New(&hclog.LoggerOptions{Name: "p", Output: &logs}), "stdout")
	for _, b := range []byte("first line\nsecond") {
		if n, err := w.Write([]byte{b}); n != 1 || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	w.flush()
	got := strings.Split(strings.TrimRight(logs.String(), "\n"), "\n")
	if len(got) != 2 || !strings.HasSuffix(got[0], "p: first line: stream=stdout") || !strings.HasSuffix(got[1], "p: second: stream=stdout") {
		t.Errorf("log:\n%s", logs.String())
	}
}
