package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"
)

// The Windows service control manager behind scm.go's interfaces.

// ConnectSCM opens the SCM of this machine (install and uninstall need an
// administrator).
func ConnectSCM() (SCMManager, error) {
	m, err := mgr.Connect()
	if err != nil {
		return nil, err
	}
	return winManager{m}, nil
}

type winManager struct{ m *mgr.Mgr }

func (w winManager) Create(name, displayName, description, exe string, args []string) (SCMService, error) {
	s, err := w.m.CreateService(name, exe, mgr.Config{
		StartType:    mgr.StartAutomatic,
		ErrorControl: mgr.ErrorNormal,
		DisplayName:  displayName,
		Description:  description,
	}, args...)
	if err != nil {
		return nil, err
	}
	return winService{s}, nil
}

func (w winManager) Open(name string) (SCMService, error) {
	s, err := w.m.OpenService(name)
	if errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST) {
		return nil, ErrNotInstalled
	}
	if err != nil {
		return nil, err
	}
	return winService{s}, nil
}

func (w winManager) Close() error { return w.m.Disconnect() }

type winService struct{ s *mgr.Service }

func (w winService) SetRecovery(delays []time.Duration, reset time.Duration) error {
	actions := make([]mgr.RecoveryAction, len(delays))
	for i, d := range delays {
		actions[i] = mgr.RecoveryAction{Type: mgr.ServiceRestart, Delay: d}
	}
	unsupported := func(err error) error {
		if errors.Is(err, windows.ERROR_INVALID_LEVEL) || errors.Is(err, windows.ERROR_CALL_NOT_IMPLEMENTED) {
			return ErrRecoveryUnsupported
		}
		return err
	}
	if err := w.s.SetRecoveryActions(actions, uint32(reset/time.Second)); err != nil {
		return unsupported(err)
	}
	// Without this the actions apply only to a crash, not to `run` ending with an
	// error, which it reports as a non-zero exit code.
	if err := w.s.SetRecoveryActionsOnNonCrashFailures(true); err != nil {
		return fmt.Errorf("set for a crash, not for an exit with an error (%w)", unsupported(err))
	}
	return nil
}

func (w winService) Recovery() ([]time.Duration, error) {
	actions, err := w.s.RecoveryActions()
	if errors.Is(err, windows.ERROR_INVALID_LEVEL) {
		return nil, ErrRecoveryUnsupported
	}
	if err != nil {
		return nil, err
	}
	var delays []time.Duration
	for _, a := range actions {
		if a.Type == mgr.ServiceRestart {
			delays = append(delays, a.Delay)
		}
	}
	return delays, nil
}

func (w winService) Start() error { return w.s.Start() }

func (w winService) Stop() error {
	_, err := w.s.Control(svc.Stop)
	return err
}

func (w winService) Query() (SCMStatus, error) {
	st, err := w.s.Query()
	if err != nil {
		return SCMStatus{}, err
	}
	out := SCMStatus{State: SCMOther, PID: st.ProcessId, ExitCode: st.Win32ExitCode}
	if st.Win32ExitCode == uint32(windows.ERROR_SERVICE_SPECIFIC_ERROR) {
		out.ExitCode = st.ServiceSpecificExitCode
	}
	switch st.State {
	case svc.Stopped:
		out.State = SCMStopped
	case svc.StartPending:
		out.State = SCMStartPending
	case svc.StopPending:
		out.State = SCMStopPending
	case svc.Running:
		out.State = SCMRunning
	}
	return out, nil
}

// Config reads the basic configuration only (QueryServiceConfig): mgr's Config also
// asks for the description, SID type and delayed start, and Wine answers the last
// ones with ERROR_INVALID_LEVEL, which would make status fail there.
func (w winService) Config() (SCMConfig, error) {
	var needed uint32
	err := windows.QueryServiceConfig(w.s.Handle, nil, 0, &needed)
	if !errors.Is(err, windows.ERROR_INSUFFICIENT_BUFFER) {
		if err == nil {
			err = errors.New("QueryServiceConfig asked for no buffer")
		}
		return SCMConfig{}, err
	}
	// A uint64 slice keeps the buffer aligned for the structure it holds.
	buf := make([]uint64, (needed+7)/8)
	c := (*windows.QUERY_SERVICE_CONFIG)(unsafe.Pointer(&buf[0]))
	if err := windows.QueryServiceConfig(w.s.Handle, c, uint32(len(buf)*8), &needed); err != nil {
		return SCMConfig{}, err
	}
	return SCMConfig{CommandLine: windows.UTF16PtrToString(c.BinaryPathName), Automatic: c.StartType == mgr.StartAutomatic}, nil
}

func (w winService) Delete() error { return w.s.Delete() }
func (w winService) Close() error  { return w.s.Close() }

// UnderSCM reports whether the service control manager started this process.
// svc.IsWindowsService asks that the parent be services.exe in session 0; Wine runs
// every process, services.exe too, in session 1, so the parent's image is also
// checked by its full path: the system's own services.exe, which only an
// administrator can replace, is the SCM wherever it runs.
var UnderSCM = sync.OnceValue(func() bool {
	if is, err := svc.IsWindowsService(); err == nil && is {
		return true
	}
	return parentIsSCM()
})

func parentIsSCM() bool {
	var pbi windows.PROCESS_BASIC_INFORMATION
	size := uint32(unsafe.Sizeof(pbi))
	if err := windows.NtQueryInformationProcess(windows.CurrentProcess(), windows.ProcessBasicInformation, unsafe.Pointer(&pbi), size, &size); err != nil {
		return false
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pbi.InheritedFromUniqueProcessId))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	buf := make([]uint16, windows.MAX_LONG_PATH)
	n := uint32(len(buf))
	if err := windows.QueryFullProcessImageName(h, 0, &buf[0], &n); err != nil {
		return false
	}
	sys, err := windows.GetSystemDirectory()
	if err != nil {
		return false
	}
	return strings.EqualFold(windows.UTF16ToString(buf[:n]), filepath.Join(sys, "services.exe"))
}

// RunAsService runs `run` as the SCM's service: svc.Run hands the SCM's controls
// to serveControls, which cancels run's context on Stop or Shutdown and reports
// STOP_PENDING until run has returned; then finish runs (the log is closed), svc.Run
// reports STOPPED with run's exit code, and the process exits at once. Whoever waits
// for STOPPED (an uninstall about to delete the binary) must find the process gone,
// not still unwinding. log records what the SCM asked.
func RunAsService(log func(msg string, args ...any), run func(context.Context) int, finish func()) (int, error) {
	served = true
	h := &scmHandler{log: log, run: func(ctx context.Context) int {
		code := run(ctx)
		finish()
		return code
	}}
	if err := svc.Run(Name, h); err != nil {
		return exitFail, err
	}
	os.Exit(h.code)
	return h.code, nil
}

type scmHandler struct {
	log  func(msg string, args ...any)
	run  func(context.Context) int
	code int
}

func (h *scmHandler) Execute(_ []string, r <-chan svc.ChangeRequest, s chan<- svc.Status) (bool, uint32) {
	requests := make(chan scmControl)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case c := <-r:
				ctl := ctlOther
				switch c.Cmd {
				case svc.Interrogate:
					ctl = ctlInterrogate
				case svc.Stop:
					ctl = ctlStop
				case svc.Shutdown:
					ctl = ctlShutdown
				}
				select {
				case requests <- ctl:
				case <-stop:
					return
				}
			case <-stop:
				return
			}
		}
	}()
	report := func(rep scmReport) {
		st := svc.Status{CheckPoint: rep.CheckPoint, WaitHint: uint32(rep.WaitHint / time.Millisecond)}
		switch rep.State {
		case SCMStartPending:
			st.State = svc.StartPending
		case SCMRunning:
			st.State = svc.Running
		case SCMStopPending:
			st.State = svc.StopPending
		default:
			st.State = svc.Stopped
		}
		if rep.Accepts {
			st.Accepts = svc.AcceptStop | svc.AcceptShutdown
		}
		s <- st
	}
	h.code = serveControls(requests, report, h.log, h.run)
	if h.code != 0 {
		return true, uint32(h.code)
	}
	return false, 0
}
