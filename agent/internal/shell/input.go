package shell

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/term"
)

// maxScriptLine bounds one line read from a pipe or a file (a parameter may carry a
// file's content); a longer line is refused and skipped, and the shell goes on.
const maxScriptLine = 1 << 20

var errLineTooLong = fmt.Errorf("the line is longer than %d bytes; skipped", maxScriptLine)

// scriptLines reads the lines of a shell fed from a pipe or a file.
type scriptLines struct{ r *bufio.Reader }

func (s *scriptLines) next() (string, error) {
	var line []byte
	tooLong := false
	for {
		chunk, more, err := s.r.ReadLine()
		if err != nil {
			return "", err
		}
		if len(line)+len(chunk) > maxScriptLine {
			tooLong, line = true, nil
		} else if !tooLong {
			line = append(line, chunk...)
		}
		if !more {
			break
		}
	}
	if tooLong {
		return "", errLineTooLong
	}
	return string(line), nil
}

// interruptKey stands for Ctrl-C at the prompt. The line editor would end the whole
// input on Ctrl-C; keyReader hands it this private-use rune and an Enter instead,
// and the completion callback (which sees every key the editor does not know) marks
// the line abandoned.
const interruptKey = '\uE003'

// keyReader reads the terminal's keys on a goroutine of its own, so that Ctrl-C is
// seen while a command runs (the terminal is raw: no SIGINT comes): then it calls
// cancel, which ends the command. Every other key waits, in order, for the line
// editor's next read.
type keyReader struct {
	chunks chan []byte
	rest   []byte
	err    error // set before chunks is closed
}

func newKeyReader(in io.Reader, cancel func() bool) *keyReader {
	k := &keyReader{chunks: make(chan []byte, 64)}
	go func() {
		defer close(k.chunks)
		buf := make([]byte, 256)
		for {
			n, err := in.Read(buf)
			var out []byte
			for _, b := range buf[:n] {
				switch {
				case b != 3:
					out = append(out, b)
				case cancel():
					// Ctrl-C ended the running command.
				default:
					out = append(out, string(interruptKey)+"\r"...)
				}
			}
			if len(out) > 0 {
				k.chunks <- out
			}
			if err != nil {
				k.err = err
				return
			}
		}
	}()
	return k
}

func (k *keyReader) Read(p []byte) (int, error) {
	if len(k.rest) == 0 {
		chunk, ok := <-k.chunks
		if !ok {
			return 0, k.err
		}
		k.rest = chunk
	}
	n := copy(p, k.rest)
	k.rest = k.rest[n:]
	return n, nil
}

// terminal is the shell on a terminal: raw mode, the line editor of golang.org/x/term
// with the shell's history and completion. Everything the shell prints while it runs
// goes through write, which keeps the prompt and the half-typed line intact when a
// notice or a log line arrives in the middle.
type terminal struct {
	t         *term.Terminal
	abandoned atomic.Bool // the line being read was ended with Ctrl-C
	restore   func()
	once      sync.Once
}

// openTerminal puts the terminal in raw mode. It fails when in and out are not both
// a terminal (or, on Windows, the console cannot take VT sequences); the shell then
// reads plain lines.
func openTerminal(in, out *os.File, cancel func() bool) (*terminal, error) {
	inFd, outFd := int(in.Fd()), int(out.Fd())
	if !term.IsTerminal(inFd) || !term.IsTerminal(outFd) {
		return nil, errors.New("not a terminal")
	}
	if err := enableVT(out); err != nil {
		return nil, err
	}
	old, err := term.MakeRaw(inFd)
	if err != nil {
		return nil, err
	}
	tt := &terminal{}
	tt.restore = func() { _ = term.Restore(inFd, old) }
	tt.t = term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{newKeyReader(in, cancel), out}, "yuzu> ")
	tt.resize(outFd)
	watchResize(func() { tt.resize(outFd) })
	return tt, nil
}

func (tt *terminal) resize(fd int) {
	if w, h, err := term.GetSize(fd); err == nil && w > 0 && h > 0 {
		_ = tt.t.SetSize(w, h)
	}
}

// Write prints text above the prompt (or plainly while a command runs), turning
// each \n into the \r\n a raw terminal needs.
func (tt *terminal) Write(p []byte) (int, error) { return tt.t.Write(p) }

// close gives the terminal back as it was.
func (tt *terminal) close() { tt.once.Do(tt.restore) }

// next reads a line. A line abandoned with Ctrl-C comes back with abandoned set.
func (tt *terminal) next() (line string, abandoned bool, err error) {
	tt.abandoned.Store(false)
	line, err = tt.t.ReadLine()
	return line, tt.abandoned.Load(), err
}

// setup wires the history and completion into the line editor; show prints
// completion choices.
func (tt *terminal) setup(h *history, complete func(line string, pos int) (string, int, []string, bool)) {
	h.dropped = tt.abandoned.Load
	tt.t.History = h
	tt.t.AutoCompleteCallback = func(line string, pos int, key rune) (string, int, bool) {
		switch key {
		case interruptKey:
			tt.abandoned.Store(true)
			return line + "^C", len(line) + 2, true
		case '\t':
			newLine, newPos, choices, ok := complete(line, pos)
			if len(choices) > 0 {
				fmt.Fprintln(tt, joinChoices(choices))
			}
			return newLine, newPos, ok
		}
		return "", 0, false
	}
}
