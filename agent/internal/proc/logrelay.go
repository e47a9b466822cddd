package proc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/sdk/rows"
)

// maxLogLine bounds one line of a plugin's stderr; a longer line is relayed in pieces.
// Log lines are short; the buffer is held for every running child.
const maxLogLine = 16 << 10

// relayLog reads a plugin's stderr and writes each line to the agent's log, attributed
// to the plugin (log is named after it), until the pipe closes. See lineLog for what
// each line becomes.
func relayLog(r io.Reader, log hclog.Logger) {
	w := newLineLog(log, "stderr")
	_, _ = io.Copy(w, r)
	w.flush()
}

// LogWriter returns an io.Writer that logs each line written to it as the plugin's
// (log is named after it), tagged with stream: see lineLog.
func LogWriter(log hclog.Logger, stream string) io.Writer { return newLineLog(log, stream) }

// parseLogLine reads an hclog JSON line. It accepts only an object whose @level and
// @message are strings and whose level is known; everything else is text.
func parseLogLine(line string) (hclog.Level, string, []any, bool) {
	if !strings.HasPrefix(line, "{") {
		return 0, "", nil, false
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(line), &raw); err != nil {
		return 0, "", nil, false
	}
	lvl, ok1 := raw["@level"].(string)
	msg, ok2 := raw["@message"].(string)
	if !ok1 || !ok2 {
		return 0, "", nil, false
	}
	level := hclog.LevelFromString(lvl)
	if level == hclog.NoLevel || level == hclog.Off {
		return 0, "", nil, false
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		switch k {
		case "@level", "@message", "@timestamp", "@module", "@caller":
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		args = append(args, rows.Printable(k), printableValue(raw[k]))
	}
	return level, rows.Printable(msg), args, true
}

func printableValue(v any) string {
	if s, ok := v.(string); ok {
		return rows.Printable(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return rows.Printable(fmt.Sprint(v))
	}
	return rows.Printable(string(b))
}

// lineLog is an io.Writer that logs each line written to it. It serves the plugin's
// stderr pipe (relayLog) and what go-plugin forwards of the plugin's os.Stdout and
// os.Stderr after the handshake, so a stray fmt.Println in a plugin shows in the
// agent's log instead of vanishing.
//
// Lines the SDK wrote are JSON (hclog): their level, message and fields are kept.
// Anything else (a C library's complaint, a Go panic trace) is relayed as text, at
// error level from a "panic:" or "fatal error:" line on. Every string is made
// printable first, so a plugin can neither forge agent log lines with newlines nor send
// terminal escapes, and no input can crash the relay. A line longer than maxLogLine is
// relayed in pieces.
type lineLog struct {
	log     hclog.Logger
	stream  string
	mu      sync.Mutex
	buf     []byte
	inPanic bool
}

func newLineLog(log hclog.Logger, stream string) *lineLog {
	return &lineLog{log: log, stream: stream}
}

func (w *lineLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := w.buf[:i]
		for len(line) > maxLogLine {
			w.emit(line[:maxLogLine])
			line = line[maxLogLine:]
		}
		w.emit(line)
		w.buf = w.buf[i+1:]
	}
	for len(w.buf) >= maxLogLine {
		w.emit(w.buf[:maxLogLine])
		w.buf = w.buf[maxLogLine:]
	}
	return len(p), nil
}

// flush logs a last line that ended without a newline.
func (w *lineLog) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.emit(w.buf)
	w.buf = nil
}

func (w *lineLog) emit(line []byte) {
	text := strings.TrimRight(string(line), "\r")
	if text == "" {
		return
	}
	if level, msg, args, ok := parseLogLine(text); ok {
		w.log.Log(level, msg, args...)
		return
	}
	if strings.HasPrefix(text, "panic: ") || strings.HasPrefix(text, "fatal error: ") {
		w.inPanic = true
	}
	level := hclog.Info
	if w.inPanic {
		level = hclog.Error
	}
	w.log.Log(level, rows.Printable(text), "stream", w.stream)
}
