package service

import "time"

// The Windows service's settings, kept here free of build tags so that they are
// tested on every system; agent/internal/cli hands them to the service control
// manager (golang.org/x/sys/windows/svc/mgr).

// WindowsDisplayName is what the Services console lists.
const WindowsDisplayName = "yuzu agent"

// WindowsRestartDelays are the service's failure actions: the SCM starts the agent
// again after each delay in turn, the last one repeating, whenever it ends without
// being asked to (a crash, or `run` giving up with an error: the actions are set to
// apply to a non-zero exit too). They match the systemd unit's Restart=on-failure
// with a back-off, so that a server that is down does not make the agent spin.
var WindowsRestartDelays = []time.Duration{5 * time.Second, 30 * time.Second, time.Minute}

// WindowsResetPeriod is how long the agent must run without failing before the SCM
// starts counting its failures from the first delay again.
const WindowsResetPeriod = 24 * time.Hour

// WindowsStopWait is how long a stop may take: the agent stops its plugins and
// closes its journal, as systemd's TimeoutStopSec allows; the handler reports it as
// its wait hint while stopping.
const WindowsStopWait = 60 * time.Second

// WindowsService is the binary and the arguments the service runs, checked as the
// other definitions are: `yuzu-agent.exe --config <file> run`.
func WindowsService(s Spec) (exe string, args []string, err error) {
	for what, p := range map[string]string{"agent binary": s.Exe, "configuration file": s.Config} {
		if err := checkPath(what, p); err != nil {
			return "", nil, err
		}
	}
	return s.Exe, s.Args(), nil
}

// WindowsLogFile is the log file of an agent the SCM runs when its configuration
// names none: a service's stderr goes nowhere, and Windows has no journal the agent
// writes to (the Event Log is not used), so the agent rotates this file itself.
// systemDir is %ProgramData%\yuzu (agentconf.SystemDir).
func WindowsLogFile(systemDir string) string { return systemDir + `\logs\agent.log` }
