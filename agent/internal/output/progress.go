package output

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/yuzugo/yuzu/sdk/rows"
)

// IsTerminal reports whether w is a character device, such as the terminal a person
// watches; progress is for people, so a pipe or a file never gets it.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// ProgressLine keeps one line of stderr up to date with a command's progress, e.g.
// `progress: 1200/5000 files`, rewriting it in place, and erases it at the end so that
// only the answer remains.
type ProgressLine struct {
	mu    sync.Mutex
	w     io.Writer
	shown bool
}

// NewProgressLine returns a ProgressLine on w.
func NewProgressLine(w io.Writer) *ProgressLine { return &ProgressLine{w: w} }

// Show puts done of total (0: unknown) units on the line.
func (p *ProgressLine) Show(done, total uint64, unit string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	text := fmt.Sprintf("progress: %d", done)
	if total > 0 {
		text += fmt.Sprintf("/%d", total)
	}
	if unit != "" {
		text += " " + rows.Printable(unit)
	}
	// \r back to the start, the text, then erase what a longer earlier line left.
	fmt.Fprintf(p.w, "\r%s\x1b[K", text)
	p.shown = true
}

// Clear erases the line, if shown.
func (p *ProgressLine) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
}
