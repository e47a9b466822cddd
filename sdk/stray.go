//go:build !windows

package sdk

import (
	"bufio"
	"encoding/json"
	"io"
	"time"
)

// maxStrayLine bounds one relayed line of stray output; a longer line is cut into
// pieces of this size rather than held in memory (every plugin holds the buffer).
const maxStrayLine = 4 << 10

// relayStray turns every line written to the plugin's stdout (which belongs to the
// protocol, see guardStdout) into a JSON log line at info level on w, the plugin's
// stderr, which the agent shows as the plugin's own log. Writing the JSON by hand
// keeps this independent of the plugin's logger, which does not exist yet when the
// guard is set up at package initialisation. Only the Unix guard (guard_unix.go)
// relays; Windows has none.
func relayStray(r io.Reader, w io.Writer) {
	br := bufio.NewReaderSize(r, maxStrayLine)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			writeStray(w, line)
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

type strayEntry struct {
	Level     string `json:"@level"`
	Message   string `json:"@message"`
	Timestamp string `json:"@timestamp"`
	Stream    string `json:"stream"`
}

func writeStray(w io.Writer, line []byte) {
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	// encoding/json replaces invalid UTF-8 with U+FFFD and escapes control bytes, so
	// whatever was printed arrives as one well-formed line.
	b, err := json.Marshal(strayEntry{
		Level:     "info",
		Message:   string(line),
		Timestamp: time.Now().Format("2006-01-02T15:04:05.000000Z07:00"),
		Stream:    "stdout",
	})
	if err != nil {
		return
	}
	_, _ = w.Write(append(b, '\n'))
}
