package supervisor

import (
	"bufio"
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
// to the plugin (log is named after it). Lines the SDK wrote are JSON (hclog): their
// level, message and fields are kept. Anything else (a C library's complaint, a Go
// panic trace) is relayed as text, at error level from a "panic:" or "fatal error:"
// line on. Every string is made printable first, so a plugin can neither forge agent
// log lines with newlines nor send terminal escapes, and no input can crash the relay.
func relayLog(r io.Reader, log hclog.Logger) {
	br := bufio.NewReaderSize(r, maxLogLine)
	inPanic := false
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			inPanic = relayLine(log, strings.TrimRight(string(line), "\r\n"), inPanic)
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

// relayLine logs one line and reports whether a panic trace is in progress.
func relayLine(log hclog.Logger, line string, inPanic bool) bool {
	if line == "" {
		return inPanic
	}
	if level, msg, args, ok := parseLogLine(line); ok {
		log.Log(level, msg, args...)
		return inPanic
	}
	if strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ") {
		inPanic = true
	}
	level := hclog.Info
	if inPanic {
		level = hclog.Error
	}
	log.Log(level, rows.Printable(line), "stream", "stderr")
	return inPanic
}

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

// lineLog is an io.Writer that logs each complete line written to it, as relayLog
// does. go-plugin hands it what the plugin writes to os.Stdout and os.Stderr after the
// handshake (it forwards both over the connection), so a stray fmt.Println in a
// plugin shows in the agent's log instead of vanishing.
type lineLog struct {
	log    hclog.Logger
	stream string
	mu     sync.Mutex
	buf    []byte
}

func newLineLog(log hclog.Logger, stream string) *lineLog {
	return &lineLog{log: log.With("stream", stream), stream: stream}
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
		w.emit(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) >= maxLogLine {
		w.emit(w.buf)
		w.buf = nil
	}
	return len(p), nil
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
	w.log.Info(rows.Printable(text))
}
