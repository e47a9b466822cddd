// Package service runs the agent as the machine's service: it writes the definitions
// that run `yuzu-agent run` (a systemd unit, a launchd daemon plist, the Windows
// service's settings), installs, uninstalls and reports them through systemctl or
// launchctl (unit.go), and holds the Windows service control manager's side: install,
// uninstall and status through the SCM (scm.go), the agent as the SCM's service, and
// the watchdog of a self-update's trial (trialwatch.go). The command line
// (agent/internal/cli, `yuzu-agent service`) parses and calls it; what each directive
// is for is in docs/operations.md, "Running as a service".
package service

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
)

// Names of the service on each system.
const (
	// Name is the systemd unit's and the Windows service's name.
	Name = "yuzu-agent"
	// LaunchdLabel is the launchd job's label, also its plist's file name.
	LaunchdLabel = "dev.yuzu.agent"
	// Description is what the service managers show.
	Description = "yuzu endpoint agent"
)

// Paths of the installed definitions.
const (
	SystemdUnitPath = "/etc/systemd/system/" + Name + ".service"
	LaunchdPath     = "/Library/LaunchDaemons/" + LaunchdLabel + ".plist"
)

// Spec is what a service runs: the agent binary and its configuration file.
type Spec struct {
	Exe    string
	Config string
}

// Args are the agent's arguments under a service manager: the configuration file and
// `run`; everything else comes from the file, so that the operator changes the file,
// never the service definition.
func (s Spec) Args() []string { return []string{"--config", s.Config, "run"} }

// systemdQuote quotes one ExecStart word: in double quotes, with backslash, quote,
// percent (a specifier) and dollar (a variable) escaped.
func systemdQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `%`, `%%`, `$`, `$$`)
	return `"` + r.Replace(s) + `"`
}

// checkPath refuses what no service definition could hold faithfully.
func checkPath(what, p string) error {
	if p == "" || strings.ContainsAny(p, "\x00\n\r") {
		return fmt.Errorf("%s %q cannot go into a service definition", what, p)
	}
	return nil
}

// SystemdUnit is the unit file. The sandboxing is the part that leaves the plugins
// their work: reads anywhere (no ProtectHome, PrivateTmp or ProtectSystem=strict,
// which would hide or change what the filesystem plugin sees), netlink and D-Bus for
// the firewall plugin, the cgroup subtree (Delegate) for the resource limits, all of
// root's capabilities (a plugin's needs are not the agent's to narrow).
func SystemdUnit(s Spec) (string, error) {
	for what, p := range map[string]string{"agent binary": s.Exe, "configuration file": s.Config} {
		if err := checkPath(what, p); err != nil {
			return "", err
		}
	}
	words := make([]string, 0, 4)
	words = append(words, systemdQuote(s.Exe))
	for _, a := range s.Args() {
		words = append(words, systemdQuote(a))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `# Written by yuzu-agent service install; docs/operations.md, "Running as a service".
[Unit]
Description=%s
Wants=network-online.target
After=network-online.target

[Service]
Type=exec
ExecStart=%s
Restart=on-failure
RestartSec=5s
# SIGTERM to the agent alone, which stops its plugins in order; SIGKILL to what is left.
KillMode=mixed
TimeoutStopSec=60s
# The agent puts each plugin in a child cgroup with its limits.
Delegate=yes
# /var/lib/yuzu, the data dir of an agent that runs as root.
StateDirectory=yuzu
StateDirectoryMode=0700
UMask=0077
# Logs go to the journal, which rotates them.
StandardOutput=journal
StandardError=journal
# Sandboxing that takes nothing the plugins use.
NoNewPrivileges=yes
ProtectHostname=yes
LockPersonality=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
# No RestrictNamespaces: its seccomp filter answers clone3() with ENOSYS, and the
# agent starts each plugin with clone3(CLONE_INTO_CGROUP) (docs/operations.md).
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK
SystemCallArchitectures=native

[Install]
WantedBy=multi-user.target
`, Description, strings.Join(words, " "))
	return b.String(), nil
}

// LaunchdStderrFile is the plist's StandardErrorPath: it gets only what bypasses the
// logger. The plist names no log file: the agent logs to the configuration's
// log-file, which the macOS package's agent.yaml sets to /Library/Logs/yuzu/agent.log
// (rotated by size by the agent, docs/operations.md "Logs").
const LaunchdStderrFile = "/Library/Logs/yuzu/stderr.log"

// LaunchdPlist is the daemon's property list: run at load, started again when it
// exits with a failure, given a minute to stop.
func LaunchdPlist(s Spec) (string, error) {
	for what, p := range map[string]string{"agent binary": s.Exe, "configuration file": s.Config} {
		if err := checkPath(what, p); err != nil {
			return "", err
		}
	}
	esc := func(v string) string {
		var buf bytes.Buffer
		_ = xml.EscapeText(&buf, []byte(v))
		return buf.String()
	}
	var args strings.Builder
	for _, a := range append([]string{s.Exe}, s.Args()...) {
		fmt.Fprintf(&args, "\t\t<string>%s</string>\n", esc(a))
	}
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>%s</string>
	<key>ProgramArguments</key>
	<array>
%s	</array>
	<key>RunAtLoad</key>
	<true/>
	<key>KeepAlive</key>
	<dict>
		<key>SuccessfulExit</key>
		<false/>
	</dict>
	<key>ExitTimeOut</key>
	<integer>60</integer>
	<key>Umask</key>
	<integer>63</integer>
	<key>StandardErrorPath</key>
	<string>%s</string>
</dict>
</plist>
`, LaunchdLabel, args.String(), LaunchdStderrFile), nil
}
