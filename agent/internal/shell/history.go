package shell

import (
	"errors"
	"io/fs"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/rows"
	"github.com/yuzugo/yuzu/sdk/safefile"
)

// The shell's history: how many lines it keeps, how long one may be, and its file in
// the data dir (docs/agent.md "The shell").
const (
	historyLines    = 1000
	historyLineMax  = 4096
	historyFileName = "shell_history"
)

// history is the shell's line history, newest last: the up and down keys walk it
// (it is the line editor's History) and every change is written to its file, mode
// 0600, so that the next shell has it. A line that starts with a blank, repeats the
// one before it, or was abandoned with Ctrl-C is not kept: a blank in front is the
// way to type a secret that must not be written down.
type history struct {
	mu      sync.Mutex
	lines   []string
	path    string // "" keeps the history in memory only
	log     hclog.Logger
	warned  bool
	dropped func() bool // reports that the line being added was abandoned
}

// loadHistory reads the history file at path, read as one that someone else may have
// planted: no link, no FIFO, bounded; lines that are not printable UTF-8 (which the
// line editor could not have written) are skipped. A missing file is an empty history.
func loadHistory(path string, log hclog.Logger) *history {
	h := &history{path: path, log: log}
	data, err := safefile.ReadFile(path, historyLines*(historyLineMax+1))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			log.Warn("shell history not read; starting afresh", "error", rows.Printable(err.Error()))
		}
		return h
	}
	for _, l := range strings.Split(string(data), "\n") {
		if keepable(l) {
			h.lines = append(h.lines, l)
		}
	}
	if n := len(h.lines) - historyLines; n > 0 {
		h.lines = h.lines[n:]
	}
	return h
}

// keepable reports whether a line belongs in the history.
func keepable(l string) bool {
	return l != "" && !strings.HasPrefix(l, " ") && len(l) <= historyLineMax && utf8.ValidString(l) && rows.Printable(l) == l
}

// Add records a line read by the line editor and writes the file.
func (h *history) Add(line string) {
	line = strings.TrimRight(line, " \t") // a completed word leaves a blank behind
	if (h.dropped != nil && h.dropped()) || !keepable(line) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.lines); n > 0 && h.lines[n-1] == line {
		return
	}
	h.lines = append(h.lines, line)
	if n := len(h.lines) - historyLines; n > 0 {
		h.lines = append([]string(nil), h.lines[n:]...)
	}
	h.save()
}

// save writes the whole history atomically, mode 0600 whatever the umask: the lines
// may hold values an operator would not show everybody. A failure is logged once and
// the history lives on in memory.
func (h *history) save() {
	if h.path == "" {
		return
	}
	data := strings.Join(h.lines, "\n") + "\n"
	err := atomicfile.WriteMode(h.path, []byte(data), 0o600)
	var syncErr *atomicfile.DirSyncError
	if err != nil && !errors.As(err, &syncErr) && !h.warned {
		h.warned = true
		h.log.Warn("shell history not written; it is kept for this shell only", "error", rows.Printable(err.Error()))
	}
}

// Len is the number of lines kept.
func (h *history) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.lines)
}

// At returns a line, 0 being the newest, as the line editor asks.
func (h *history) At(i int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lines[len(h.lines)-1-i]
}
