package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/yuzugo/yuzu/sdk/rows"
)

// The Windows service (docs/operations.md, "Running as a service"): `service
// install|uninstall|status` through the service control manager, and `run` as the
// service the SCM starts. The logic is here, without build tags, behind the small
// interfaces below, so that it is tested on every system; scm_windows.go puts
// golang.org/x/sys/windows/svc and svc/mgr behind them.

// SCMState is a service's state as the SCM reports it.
type SCMState int

const (
	SCMStopped SCMState = iota + 1
	SCMStartPending
	SCMStopPending
	SCMRunning
	SCMOther // continue, pause pending, paused: not states this agent enters
)

func (s SCMState) String() string {
	switch s {
	case SCMStopped:
		return "STOPPED"
	case SCMStartPending:
		return "START_PENDING"
	case SCMStopPending:
		return "STOP_PENDING"
	case SCMRunning:
		return "RUNNING"
	}
	return "OTHER"
}

// SCMStatus is what a query of the service answers.
type SCMStatus struct {
	State    SCMState
	PID      uint32
	ExitCode uint32 // the agent's own exit code once stopped, 0 if none
}

// SCMConfig is the part of a service's configuration install sets and status shows.
type SCMConfig struct {
	CommandLine string // the binary and its arguments, as the SCM keeps them
	Automatic   bool   // starts with the machine
}

// SCMManager is a connection to the SCM.
type SCMManager interface {
	// Create registers a service that runs exe with args, starting automatically.
	Create(name, displayName, description, exe string, args []string) (SCMService, error)
	// Open opens an installed service; ErrNotInstalled when there is none.
	Open(name string) (SCMService, error)
	Close() error
}

// SCMService is one installed service.
type SCMService interface {
	// SetRecovery sets the restart delays on failure, also for a non-zero exit,
	// and the period after which failures count from the first delay again.
	SetRecovery(delays []time.Duration, reset time.Duration) error
	Recovery() ([]time.Duration, error)
	Start() error
	Stop() error
	Query() (SCMStatus, error)
	Config() (SCMConfig, error)
	Delete() error
	Close() error
}

// served is set once RunAsService has handed the process to the SCM: the agent's
// main then does not do it again for an early exit (Served).
var served bool

// Served reports whether RunAsService has handed this process to the SCM.
func Served() bool { return served }

// The agent's exit codes, which Manage and RunAsService return: the same as the
// command line's.
const (
	exitOK   = 0
	exitFail = 1
)

// ErrNotInstalled is Open's answer for a service that does not exist.
var ErrNotInstalled = errors.New("not installed")

// ErrRecoveryUnsupported is SetRecovery's answer where the SCM cannot keep failure
// actions; install goes on without them and says so.
var ErrRecoveryUnsupported = errors.New("the service manager does not take failure actions")

// scmPoll is how often a state change is polled for, and scmWait how long install
// waits for RUNNING and uninstall for STOPPED; variables for the tests.
var (
	scmPoll = 250 * time.Millisecond
	scmWait = WindowsStopWait + 10*time.Second
)

// Manage is `service install|uninstall|status` on Windows. conf is the
// configuration file the service is to read, exe the agent binary.
func Manage(ctx context.Context, m SCMManager, action, exe, conf string, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintln(stderr, "yuzu-agent: service:", rows.Printable(err.Error()))
		return exitFail
	}
	name := Name
	switch action {
	case "install":
		exe, args, err := WindowsService(Spec{Exe: exe, Config: conf})
		if err != nil {
			return fail(err)
		}
		if s, err := m.Open(name); err == nil {
			_ = s.Close()
			return fail(fmt.Errorf("%s is already installed; run `yuzu-agent service uninstall` first", name))
		} else if !errors.Is(err, ErrNotInstalled) {
			return fail(err)
		}
		s, err := m.Create(name, WindowsDisplayName, Description, exe, args)
		if err != nil {
			return fail(fmt.Errorf("creating %s: %w", name, err))
		}
		defer s.Close()
		fmt.Fprintf(stdout, "created service %s: %s\n", name, rows.Printable(quoteArgs(append([]string{exe}, args...))))
		if err := s.SetRecovery(WindowsRestartDelays, WindowsResetPeriod); err != nil {
			// A service without restarts still runs; the operator is told.
			fmt.Fprintf(stderr, "yuzu-agent: service: restart on failure: %s\n", rows.Printable(err.Error()))
		}
		if err := s.Start(); err != nil {
			// The SCM refused to start it: take the registration back, so that a
			// failed install leaves nothing behind.
			if derr := s.Delete(); derr != nil {
				return fail(fmt.Errorf("starting %s: %w; removing it again: %v", name, err, derr))
			}
			fmt.Fprintf(stdout, "removed service %s again\n", name)
			return fail(fmt.Errorf("starting %s: %w", name, err))
		}
		st, err := waitState(ctx, s, SCMRunning)
		if err != nil {
			// It was started and may yet run: it stays, and the operator is told
			// where to look and how to take it away.
			return fail(fmt.Errorf("starting %s: %w; it stays installed: its log says why, and `yuzu-agent service uninstall` removes it", name, err))
		}
		fmt.Fprintf(stdout, "started service %s (pid %d)\n", name, st.PID)
		return exitOK
	case "uninstall":
		s, err := m.Open(name)
		if errors.Is(err, ErrNotInstalled) {
			fmt.Fprintf(stdout, "service %s is not installed\n", name)
			return exitOK
		}
		if err != nil {
			return fail(err)
		}
		defer s.Close()
		st, err := s.Query()
		if err != nil {
			return fail(err)
		}
		if st.State != SCMStopped {
			if st.State != SCMStopPending {
				if err := s.Stop(); err != nil {
					return fail(fmt.Errorf("stopping %s: %w", name, err))
				}
			}
			if _, err := waitState(ctx, s, SCMStopped); err != nil {
				return fail(fmt.Errorf("stopping %s: %w", name, err))
			}
			fmt.Fprintf(stdout, "stopped service %s\n", name)
		}
		if err := s.Delete(); err != nil {
			return fail(fmt.Errorf("removing %s: %w", name, err))
		}
		fmt.Fprintf(stdout, "removed service %s\n", name)
		return exitOK
	case "status":
		s, err := m.Open(name)
		if errors.Is(err, ErrNotInstalled) {
			fmt.Fprintf(stdout, "service %s is not installed\n", name)
			return exitFail
		}
		if err != nil {
			return fail(err)
		}
		defer s.Close()
		st, err := s.Query()
		if err != nil {
			return fail(err)
		}
		c, err := s.Config()
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "service %s: %s", name, st.State)
		if st.State == SCMRunning || st.State == SCMStopPending {
			fmt.Fprintf(stdout, " (pid %d)", st.PID)
		}
		if st.State == SCMStopped && st.ExitCode != 0 {
			fmt.Fprintf(stdout, " (last exit %d)", st.ExitCode)
		}
		start := "manual"
		if c.Automatic {
			start = "automatic"
		}
		fmt.Fprintf(stdout, "\ncommand: %s\nstart: %s\n", rows.Printable(c.CommandLine), start)
		if delays, err := s.Recovery(); err == nil {
			fmt.Fprintf(stdout, "on failure: %s\n", describeRecovery(delays))
		} else {
			fmt.Fprintf(stdout, "on failure: unknown (%s)\n", rows.Printable(err.Error()))
		}
		if st.State != SCMRunning {
			return exitFail
		}
		return exitOK
	}
	return fail(fmt.Errorf("unknown action %q", action))
}

// describeRecovery says what the SCM does when the agent fails.
func describeRecovery(delays []time.Duration) string {
	if len(delays) == 0 {
		return "nothing"
	}
	words := make([]string, len(delays))
	for i, d := range delays {
		words[i] = d.String()
	}
	return "restart after " + strings.Join(words, ", ")
}

// waitState polls s until it is in want, for at most scmWait.
func waitState(ctx context.Context, s SCMService, want SCMState) (SCMStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, scmWait)
	defer cancel()
	for {
		st, err := s.Query()
		if err != nil {
			return st, err
		}
		if st.State == want {
			return st, nil
		}
		if want == SCMRunning && st.State == SCMStopped {
			return st, fmt.Errorf("it stopped at once (exit code %d); its log says why", st.ExitCode)
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("still %s after %s, not %s", st.State, scmWait, want)
		case <-time.After(scmPoll):
		}
	}
}

// quoteArgs shows a command line for a person: words with a space or a quote in
// double quotes.
func quoteArgs(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\"") {
			a = `"` + strings.ReplaceAll(a, `"`, `\"`) + `"`
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// The agent as the SCM's service: the control handler.

// scmControl is a control request from the SCM.
type scmControl int

const (
	ctlInterrogate scmControl = iota + 1
	ctlStop
	ctlShutdown
	ctlOther
)

// scmReport is one status the handler reports to the SCM.
type scmReport struct {
	State SCMState
	// Accepts is whether Stop and Shutdown are accepted (only while running).
	Accepts bool
	// CheckPoint grows while a pending state makes progress; WaitHint is how long
	// the SCM should wait for the next report.
	CheckPoint uint32
	WaitHint   time.Duration
}

// stopReportEvery is how often a stopping agent tells the SCM it is still at it.
var stopReportEvery = 2 * time.Second

// serveControls runs the agent (run, given a context that a stop cancels) as a
// service: it reports START_PENDING, then RUNNING while run runs, and on a Stop or
// Shutdown request STOP_PENDING, with a growing checkpoint, until run has returned:
// the agent stops its plugins and closes its journal as it does on SIGTERM. It
// returns run's exit code; the caller reports STOPPED with it (svc.Run does), and a
// non-zero code is a failure the SCM's recovery acts on.
func serveControls(requests <-chan scmControl, report func(scmReport), log func(msg string, args ...any), run func(context.Context) int) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	report(scmReport{State: SCMStartPending, WaitHint: 10 * time.Second})
	done := make(chan int, 1)
	go func() { done <- run(ctx) }()
	current := scmReport{State: SCMRunning, Accepts: true}
	report(current)
	var tick <-chan time.Time
	for {
		select {
		case code := <-done:
			if current.State == SCMStopPending {
				log("stopped at the service manager's request", "exit_code", code)
			}
			return code
		case c, ok := <-requests:
			if !ok {
				// No more requests can come; wait for run alone.
				requests = nil
				continue
			}
			switch c {
			case ctlInterrogate:
				report(current)
			case ctlStop, ctlShutdown:
				if current.State == SCMStopPending {
					report(current)
					continue
				}
				what := "stop"
				if c == ctlShutdown {
					what = "shutdown"
				}
				log("stopping: the service manager asked", "control", what)
				current = scmReport{State: SCMStopPending, CheckPoint: 1, WaitHint: WindowsStopWait}
				report(current)
				cancel()
				t := time.NewTicker(stopReportEvery)
				defer t.Stop()
				tick = t.C
			default:
				// Pause, parameter changes and the like are not accepted; the SCM
				// does not send them, and an answer of the current state is enough.
				report(current)
			}
		case <-tick:
			current.CheckPoint++
			report(current)
		}
	}
}
