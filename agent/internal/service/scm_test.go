package service

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeSCM is a service control manager in memory: one service at most, which goes
// from START_PENDING to RUNNING one query after a start and to STOPPED one query
// after a stop.
type fakeSCM struct {
	mu        sync.Mutex
	installed bool
	name, exe string
	args      []string
	recovery  []time.Duration
	reset     time.Duration
	state     SCMState
	noRecover bool // SetRecovery answers ErrRecoveryUnsupported
	calls     []string
}

func (f *fakeSCM) Create(name, _, _, exe string, args []string) (SCMService, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "create")
	f.installed, f.name, f.exe, f.args, f.state = true, name, exe, args, SCMStopped
	return fakeService{f}, nil
}

func (f *fakeSCM) Open(name string) (SCMService, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.installed || name != f.name {
		return nil, ErrNotInstalled
	}
	return fakeService{f}, nil
}

func (f *fakeSCM) Close() error { return nil }

type fakeService struct{ f *fakeSCM }

func (s fakeService) SetRecovery(d []time.Duration, reset time.Duration) error {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if s.f.noRecover {
		return ErrRecoveryUnsupported
	}
	s.f.calls = append(s.f.calls, "recovery")
	s.f.recovery, s.f.reset = d, reset
	return nil
}

func (s fakeService) Recovery() ([]time.Duration, error) { return s.f.recovery, nil }

func (s fakeService) Start() error {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.calls = append(s.f.calls, "start")
	s.f.state = SCMStartPending
	return nil
}

func (s fakeService) Stop() error {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.calls = append(s.f.calls, "stop")
	s.f.state = SCMStopPending
	return nil
}

func (s fakeService) Query() (SCMStatus, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	st := SCMStatus{State: s.f.state}
	switch s.f.state {
	case SCMStartPending:
		s.f.state = SCMRunning
	case SCMStopPending:
		s.f.state = SCMStopped
	case SCMRunning:
		st.PID = 42
	}
	return st, nil
}

func (s fakeService) Config() (SCMConfig, error) {
	return SCMConfig{CommandLine: quoteArgs(append([]string{s.f.exe}, s.f.args...)), Automatic: true}, nil
}

func (s fakeService) Delete() error {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.calls = append(s.f.calls, "delete")
	s.f.installed = false
	return nil
}

func (s fakeService) Close() error { return nil }

func TestWindowsServiceInstallStatusUninstall(t *testing.T) {
	old := scmPoll
	scmPoll = time.Millisecond
	t.Cleanup(func() { scmPoll = old })
	f := &fakeSCM{}
	exe, conf := `C:\Program Files\yuzu\yuzu-agent.exe`, `C:\ProgramData\yuzu\agent.yaml`
	do := func(action string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := Manage(context.Background(), f, action, exe, conf, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	if code, out, _ := do("status"); code != exitFail || !strings.Contains(out, "not installed") {
		t.Errorf("status before install: %d %q", code, out)
	}
	code, out, errOut := do("install")
	if code != exitOK {
		t.Fatalf("install: %d %q %q", code, out, errOut)
	}
	if f.name != Name || f.exe != exe || strings.Join(f.args, "|") != "--config|"+conf+"|run" {
		t.Errorf("registered %q %q %q", f.name, f.exe, f.args)
	}
	if len(f.recovery) != len(WindowsRestartDelays) || f.reset != WindowsResetPeriod {
		t.Errorf("recovery %v reset %v", f.recovery, f.reset)
	}
	if strings.Join(f.calls, ",") != "create,recovery,start" {
		t.Errorf("calls %q", f.calls)
	}
	if !strings.Contains(out, `"C:\Program Files\yuzu\yuzu-agent.exe" --config C:\ProgramData\yuzu\agent.yaml run`) ||
		!strings.Contains(out, "started service yuzu-agent (pid 42)") {
		t.Errorf("install said %q", out)
	}
	if code, _, errOut := do("install"); code != exitFail || !strings.Contains(errOut, "already installed") {
		t.Errorf("second install: %d %q", code, errOut)
	}
	code, out, _ = do("status")
	if code != exitOK || !strings.Contains(out, "service yuzu-agent: RUNNING (pid 42)") ||
		!strings.Contains(out, "start: automatic") || !strings.Contains(out, "on failure: restart after 5s, 30s, 1m0s") {
		t.Errorf("status: %d %q", code, out)
	}
	f.calls = nil
	code, out, _ = do("uninstall")
	if code != exitOK || strings.Join(f.calls, ",") != "stop,delete" || !strings.Contains(out, "removed service yuzu-agent") {
		t.Errorf("uninstall: %d %q calls %q", code, out, f.calls)
	}
	if code, out, _ := do("uninstall"); code != exitOK || !strings.Contains(out, "not installed") {
		t.Errorf("second uninstall: %d %q", code, out)
	}
}

// TestWindowsServiceInstallWithoutRecovery: a manager without failure actions still
// gets a running service, and the operator is told.
func TestWindowsServiceInstallWithoutRecovery(t *testing.T) {
	old := scmPoll
	scmPoll = time.Millisecond
	t.Cleanup(func() { scmPoll = old })
	f := &fakeSCM{noRecover: true}
	var stdout, stderr bytes.Buffer
	if code := Manage(context.Background(), f, "install", `C:\a.exe`, `C:\a.yaml`, &stdout, &stderr); code != exitOK {
		t.Fatalf("install: %d %q", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "restart on failure: the service manager does not take failure actions") {
		t.Errorf("stderr %q", stderr.String())
	}
	if code := Manage(context.Background(), &fakeSCM{}, "install", "C:\\a\n.exe", `C:\a.yaml`, &stdout, &stderr); code != exitFail {
		t.Errorf("a line break in the path was installed")
	}
}

// recorder collects the handler's reports.
type recorder struct {
	mu      sync.Mutex
	reports []scmReport
	seen    chan scmReport
}

func newRecorder() *recorder { return &recorder{seen: make(chan scmReport, 100)} }

func (r *recorder) report(rep scmReport) {
	r.mu.Lock()
	r.reports = append(r.reports, rep)
	r.mu.Unlock()
	r.seen <- rep
}

// next waits for the next report.
func (r *recorder) next(t *testing.T) scmReport {
	t.Helper()
	select {
	case rep := <-r.seen:
		return rep
	case <-time.After(10 * time.Second):
		t.Fatal("no report from the handler")
	}
	return scmReport{}
}

func TestServeControlsStop(t *testing.T) {
	for _, ctl := range []scmControl{ctlStop, ctlShutdown} {
		old := stopReportEvery
		stopReportEvery = 5 * time.Millisecond
		t.Cleanup(func() { stopReportEvery = old })
		r := newRecorder()
		requests := make(chan scmControl)
		stopped := make(chan struct{})
		release := make(chan struct{})
		var logged []string
		result := make(chan int, 1)
		go func() {
			result <- serveControls(requests, r.report, func(msg string, _ ...any) { logged = append(logged, msg) }, func(ctx context.Context) int {
				<-ctx.Done()
				close(stopped)
				<-release // the agent is still stopping its plugins
				return 0
			})
		}()
		if rep := r.next(t); rep.State != SCMStartPending || rep.Accepts {
			t.Errorf("first report %+v", rep)
		}
		if rep := r.next(t); rep.State != SCMRunning || !rep.Accepts {
			t.Errorf("second report %+v", rep)
		}
		requests <- ctlInterrogate
		if rep := r.next(t); rep.State != SCMRunning {
			t.Errorf("interrogate answered %+v", rep)
		}
		requests <- ctl
		rep := r.next(t)
		if rep.State != SCMStopPending || rep.Accepts || rep.WaitHint != WindowsStopWait || rep.CheckPoint != 1 {
			t.Errorf("after %d: %+v", ctl, rep)
		}
		<-stopped
		// While run stops, the checkpoint grows.
		if rep := r.next(t); rep.State != SCMStopPending || rep.CheckPoint < 2 {
			t.Errorf("while stopping: %+v", rep)
		}
		close(release)
		select {
		case code := <-result:
			if code != 0 {
				t.Errorf("exit code %d", code)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("serveControls did not return after run did")
		}
		if len(logged) != 2 {
			t.Errorf("logged %q", logged)
		}
	}
}

// TestServeControlsRunEnds: run ending on its own (the server refused the agent for
// good) ends the service with run's code, without a stop request.
func TestServeControlsRunEnds(t *testing.T) {
	r := newRecorder()
	code := serveControls(make(chan scmControl), r.report, func(string, ...any) {}, func(context.Context) int { return 1 })
	if code != 1 {
		t.Errorf("code %d", code)
	}
	for _, rep := range r.reports {
		if rep.State == SCMStopPending {
			t.Errorf("reported %+v without a stop", rep)
		}
	}
}
