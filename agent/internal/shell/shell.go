// Package shell is `yuzu-agent shell`: one supervisor for many commands, typed at a
// line editor with completion and history, or read from a script.
package shell

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/internal/output"
	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/agent/words"
	"github.com/yuzugo/yuzu/definitions"
	"github.com/yuzugo/yuzu/sdk/host"
	"github.com/yuzugo/yuzu/sdk/rows"
)

const shellHelp = `Type a command as exec takes it, one a line:
  PLUGIN ACTION [key=value ...]     e.g. filesystem read path=/etc/hosts
  DEFINITION-ID [key=value ...]     e.g. device.tags.set key=env value=prod
Words are split and quoted as a POSIX shell does: path='/tmp/a b' or "a \"b\"".
Shell commands:
  .plugins            every plugin: version, state, restarts, last error, limits
  .describe PLUGIN    a plugin's actions, parameters, rows and definitions
  .output [FORMAT]    show or set how answers print: capture, json, jsonl or table
  .help               this text
  .quit               leave (Ctrl-D too)
Tab completes plugins, actions, definition ids and parameter names; up and down walk
the history. Ctrl-C cancels the running command (or the line being typed). A line
that starts with a blank is not kept in the history; # starts a comment line.
`

// Commands is what the shell asks of the agent's command line: the parts it shares
// with exec, describe and plugins, on the supervisor Open gave.
type Commands interface {
	// Exec runs one command line as `yuzu-agent exec` would, with its answer in
	// format to out and progress to progress (nil: none), and returns the exit
	// status and the plugin it ran on. err is a line that could not be run (a usage
	// problem); message words an agent-side error.
	Exec(ctx context.Context, words []string, format string, out, progress io.Writer, message func(error) string) (rc int, plugin string, err error)
	// Describe prints a plugin's manifest as `describe` does and returns it.
	Describe(ctx context.Context, name string, out io.Writer) (host.Manifest, error)
	// Plugins prints every plugin's state as `plugins` does and returns the status.
	Plugins(out io.Writer) int
	// Message is exec's wording of an agent-side error.
	Message(err error) string
}

// Options are what Run needs from the command line.
type Options struct {
	// Version is the agent's, for the greeting.
	Version string
	// Log is the logger; NewLogger makes one that writes to w (the line editor, so
	// that log lines do not land in the middle of the prompt).
	Log       hclog.Logger
	NewLogger func(w io.Writer) hclog.Logger
	// Open makes the supervisor the shell runs on, and the Commands on it.
	Open func(log hclog.Logger) (*supervisor.Supervisor, Commands, error)
	// DataDir holds the line editor's history file (shell_history).
	DataDir string
	// StartWait bounds a start of the plugins and a describe; CatalogWatch is how
	// often the catalog is looked at.
	StartWait, CatalogWatch time.Duration
}

// The shell's exit statuses, as the command line's: a command's own status, 0 for
// a shell command that worked, 1 for one that failed, 2 for a line it could not run.
const (
	rcOK    = 0
	rcFail  = 1
	rcUsage = 2
)

// outputFormats are what .output accepts: exec's --output formats.
var outputFormats = func() []string {
	var names []string
	for _, f := range output.Formats {
		names = append(names, string(f))
	}
	return names
}()

// shell is `yuzu-agent shell`: one supervisor for many commands.
type shell struct {
	o    Options
	log  hclog.Logger
	sup  *supervisor.Supervisor
	cmds Commands
	out  io.Writer // answers
	msg  io.Writer // the shell's own messages and notices
	term *terminal // nil when reading plain lines

	format  string
	running atomic.Pointer[context.CancelFunc] // the command in flight
	lastRC  int
	lineNo  int

	mu   sync.Mutex
	decl declared
}

// Run is `yuzu-agent shell`. It reads a terminal through a line editor, or plain
// lines from a pipe or a file (a script), and returns the status of the last command,
// as sh does.
func Run(o Options, stdin io.Reader, stdout, stderr io.Writer) int {
	log := o.Log
	s := &shell{o: o, out: stdout, msg: stderr, format: "capture"}
	in, inFile := stdin.(*os.File)
	out, outFile := stdout.(*os.File)
	if inFile && outFile {
		if tt, err := openTerminal(in, out, s.cancelRunning); err == nil {
			s.term = tt
			defer tt.close()
			s.out, s.msg = tt, tt
			// Log lines must go through the line editor too, or they would land in
			// the middle of the prompt without the \r a raw terminal needs.
			log = o.NewLogger(tt)
		}
	}
	s.log = log
	ctx, stop := s.signals()
	defer stop()
	sup, cmds, err := o.Open(log)
	if err != nil {
		fmt.Fprintln(s.msg, "yuzu-agent:", rows.Printable(err.Error()))
		return rcFail
	}
	s.sup, s.cmds = sup, cmds
	notices := sup.Subscribe(64)
	noticesDone := make(chan struct{})
	go func() {
		defer close(noticesDone)
		s.showChanges(notices)
	}()
	defer func() {
		sup.Close()
		<-noticesDone
	}()
	// The shell follows the catalog as run does (plugins add in another terminal).
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	go sup.Watch(watchCtx, o.CatalogWatch)

	var read func() (string, bool, error)
	if s.term != nil {
		s.start(ctx)
		h := loadHistory(filepath.Join(o.DataDir, historyFileName), log)
		s.term.setup(h, s.complete)
		read = s.term.next
		defer fmt.Fprintln(s.msg)
	} else {
		lines := &scriptLines{r: bufio.NewReader(stdin)}
		read = func() (string, bool, error) {
			l, err := lines.next()
			return l, false, err
		}
	}
	s.loop(ctx, read)
	return s.lastRC
}

// signals makes SIGINT cancel the running command (the shell goes on) and end an idle
// shell, and SIGTERM end the shell; a second SIGTERM ends it at once with 130.
func (s *shell) signals() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-sigs:
				if sig == os.Interrupt && s.cancelRunning() {
					continue
				}
				if ctx.Err() != nil {
					if s.term != nil {
						s.term.close()
					}
					os.Exit(130)
				}
				cancel()
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// cancelRunning cancels the command in flight and reports whether there was one.
func (s *shell) cancelRunning() bool {
	if c := s.running.Load(); c != nil {
		(*c)()
		return true
	}
	return false
}

// loop reads and runs lines until the input ends, .quit, or ctx ends. The reads run
// on a goroutine of their own so that a signal can end a shell waiting for input.
func (s *shell) loop(ctx context.Context, read func() (string, bool, error)) {
	type input struct {
		line      string
		abandoned bool
		err       error
	}
	inputs := make(chan input)
	next := make(chan struct{})
	go func() {
		for {
			l, abandoned, err := read()
			select {
			case inputs <- input{l, abandoned, err}:
			case <-ctx.Done():
				return
			}
			if err != nil && !errors.Is(err, errLineTooLong) {
				return
			}
			select {
			case <-next:
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		var in input
		select {
		case in = <-inputs:
		case <-ctx.Done():
			return
		}
		switch {
		case errors.Is(in.err, errLineTooLong):
			s.lineNo++
			s.problem(in.err)
		case in.err != nil:
			if !errors.Is(in.err, io.EOF) {
				s.problem(in.err)
			}
			return
		case !in.abandoned:
			s.lineNo++
			if s.do(ctx, in.line) {
				return
			}
		}
		next <- struct{}{}
	}
}

// problem reports a line the shell could not run, naming the line in a script.
func (s *shell) problem(err error) {
	s.lastRC = rcUsage
	where := ""
	if s.term == nil {
		where = fmt.Sprintf(" line %d:", s.lineNo)
	}
	fmt.Fprintf(s.msg, "yuzu-agent shell:%s %s\n", where, rows.PrintableLines(err.Error()))
}

// do runs one line and reports whether the shell should end.
func (s *shell) do(ctx context.Context, line string) (quit bool) {
	trimmed := strings.TrimLeft(line, " \t")
	if trimmed == "" || strings.HasPrefix(trimmed, "#") {
		return false
	}
	ws, err := words.Split(line)
	if err != nil {
		s.problem(err)
		return false
	}
	if strings.HasPrefix(ws[0], ".") {
		return s.meta(ctx, ws)
	}
	s.exec(ctx, ws)
	return false
}

// meta runs one of the shell's own commands.
func (s *shell) meta(ctx context.Context, words []string) (quit bool) {
	arg := func() (string, bool) {
		if len(words) != 2 {
			s.problem(fmt.Errorf("%s needs exactly one argument", words[0]))
			return "", false
		}
		return words[1], true
	}
	switch words[0] {
	case ".quit", ".exit":
		return true
	case ".help":
		fmt.Fprint(s.msg, shellHelp)
		s.lastRC = rcOK
	case ".plugins":
		s.lastRC = s.cmds.Plugins(s.out)
	case ".describe":
		name, ok := arg()
		if !ok {
			return false
		}
		dctx, cancel := s.command(ctx, s.o.StartWait)
		defer cancel()
		m, err := s.cmds.Describe(dctx, name, s.out)
		if err != nil {
			fmt.Fprintln(s.msg, "yuzu-agent:", rows.Printable(err.Error()))
			s.lastRC = rcFail
			return false
		}
		s.learn(m)
		s.lastRC = rcOK
	case ".output":
		if len(words) == 1 {
			fmt.Fprintln(s.msg, "output:", s.format)
			return false
		}
		f, ok := arg()
		if !ok {
			return false
		}
		for _, known := range outputFormats {
			if f == known {
				s.format = f
				s.lastRC = rcOK
				return false
			}
		}
		s.problem(fmt.Errorf(".output %s: want one of %s", rows.Printable(f), strings.Join(outputFormats, ", ")))
	default:
		s.problem(fmt.Errorf("unknown shell command %s (.help lists them)", rows.Printable(words[0])))
	}
	return false
}

// command is the context of one command: Ctrl-C (or SIGINT) cancels it, and, when
// timeout is positive, it ends then. done must be called when the command is over.
func (s *shell) command(ctx context.Context, timeout time.Duration) (cctx context.Context, done func()) {
	var cancel context.CancelFunc
	if timeout > 0 {
		cctx, cancel = context.WithTimeout(ctx, timeout)
	} else {
		cctx, cancel = context.WithCancel(ctx)
	}
	s.running.Store(&cancel)
	return cctx, func() {
		s.running.Store(nil)
		cancel()
	}
}

// exec runs a command line as `yuzu-agent exec` would, on the shell's supervisor.
func (s *shell) exec(ctx context.Context, words []string) {
	cctx, done := s.command(ctx, 0)
	defer done()
	var progress io.Writer
	if s.term != nil {
		progress = s.term
	}
	message := func(err error) string { return s.agentMessage(ctx, err) }
	rc, plugin, err := s.cmds.Exec(cctx, words, s.format, s.out, progress, message)
	if err != nil {
		s.problem(err)
		return
	}
	s.lastRC = rc
	s.learnPlugin(plugin)
}

// agentMessage is exec's wording, but a command cancelled while the shell goes on
// was cancelled by Ctrl-C.
func (s *shell) agentMessage(shellCtx context.Context, err error) string {
	if errors.Is(err, context.Canceled) && shellCtx.Err() == nil {
		return "command cancelled: Ctrl-C"
	}
	return s.cmds.Message(err)
}

// start starts every plugin, so that the first command finds it warm and completion
// knows its actions, then greets.
func (s *shell) start(ctx context.Context) {
	fmt.Fprintln(s.msg, "yuzu-agent shell: starting the plugins...")
	sctx, cancel := context.WithTimeout(ctx, s.o.StartWait)
	defer cancel()
	s.sup.Start(sctx)
	var states []string
	for _, st := range s.sup.Status() {
		states = append(states, rows.Printable(st.Name)+" "+string(st.State))
		if st.State == supervisor.StateRunning {
			if m, err := s.sup.Describe(sctx, st.Name); err == nil {
				s.learn(m)
			}
		}
	}
	s.mu.Lock()
	s.decl.plugins = s.sup.Plugins()
	s.decl.formats = outputFormats
	s.mu.Unlock()
	s.learn(host.Manifest{})
	fmt.Fprintf(s.msg, "yuzu-agent %s shell: plugins %s. .help for help, Ctrl-D to leave.\n", s.o.Version, strings.Join(states, ", "))
}

// learn keeps a plugin's manifest for completion and recomputes the definition ids
// (the workflows and every known plugin's served definitions). A zero manifest only
// recomputes.
func (s *shell) learn(m host.Manifest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.decl.manifests == nil {
		s.decl.manifests = map[string]host.Manifest{}
	}
	if m.Name != "" {
		s.decl.manifests[m.Name] = m
	}
	defs, _ := definitions.Workflows()
	for _, name := range slices.Sorted(maps.Keys(s.decl.manifests)) {
		served, err := s.decl.manifests[name].ServedDefinitions()
		if err == nil {
			defs = append(defs, served...)
		}
	}
	s.decl.defs = defs
}

// learnPlugin learns the manifest of a plugin a command just ran on, if completion
// does not know it yet and it is running (so asking cannot wait for a start).
func (s *shell) learnPlugin(name string) {
	if s.term == nil {
		return
	}
	s.mu.Lock()
	_, known := s.decl.manifests[name]
	s.mu.Unlock()
	if known {
		return
	}
	for _, st := range s.sup.Status() {
		if st.Name == name && st.State == supervisor.StateRunning {
			ctx, cancel := context.WithTimeout(context.Background(), s.o.StartWait)
			defer cancel()
			if m, err := s.sup.Describe(ctx, name); err == nil {
				s.learn(m)
			}
		}
	}
}

// complete is the Tab key.
func (s *shell) complete(line string, pos int) (string, int, []string, bool) {
	s.mu.Lock()
	d := s.decl
	s.mu.Unlock()
	return d.complete(line, pos)
}

// joinChoices shows completion choices on one line; they come from plugins' names
// and declarations, so each is escaped.
func joinChoices(choices []string) string {
	out := make([]string, len(choices))
	for i, c := range choices {
		out[i] = rows.Printable(c)
	}
	return strings.Join(out, "  ")
}

// showChanges prints a line as each plugin crashes, fails, is refused or comes back
// after a crash, from the supervisor's state changes, until the supervisor closes.
func (s *shell) showChanges(sub *supervisor.Subscription) {
	restarting := map[string]bool{}
	var dropped int64
	for c := range sub.C {
		name, why := rows.Printable(c.Plugin), rows.Printable(rows.Line(c.Reason))
		switch c.To {
		case supervisor.StateBackoff:
			restarting[c.Plugin] = true
			if c.From == supervisor.StateStarting {
				fmt.Fprintf(s.msg, "[plugin %s] did not start: %s; trying again\n", name, why)
			} else {
				fmt.Fprintf(s.msg, "[plugin %s] crashed: %s; restarting\n", name, why)
			}
		case supervisor.StateFailed:
			delete(restarting, c.Plugin)
			fmt.Fprintf(s.msg, "[plugin %s] failed: %s; its commands are refused until the agent tries it again\n", name, why)
		case supervisor.StateRefused:
			fmt.Fprintf(s.msg, "[plugin %s] refused: %s\n", name, why)
		case supervisor.StateRunning:
			switch {
			case c.From == supervisor.StateRunning:
				// An upgrade or a rollback under the running plugin.
				fmt.Fprintf(s.msg, "[plugin %s] %s\n", name, why)
			case restarting[c.Plugin]:
				delete(restarting, c.Plugin)
				fmt.Fprintf(s.msg, "[plugin %s] restarted (%s)\n", name, why)
			}
		}
		if d := sub.Dropped(); d > dropped {
			fmt.Fprintf(s.msg, "[plugins] %d state changes were not shown; .plugins has the current states\n", d-dropped)
			dropped = d
		}
	}
}
