package service

import (
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestSystemdUnitVerifies has systemd-analyze verify check the unit as written, with
// a real binary and a path that needs quoting. systemd is not PID 1 on a build
// machine, so verify (which reads the file) is what can run; starting the unit is
// TestSystemdUnitRealStartNeedsSystemdAsPID1's.
func TestSystemdUnitVerifies(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("systemd units are for Linux")
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is missing (scripts/deps.sh installs the systemd package): the unit cannot be checked")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	unit, err := SystemdUnit(Spec{Exe: exe, Config: filepath.Join(dir, "odd 100% $HOME \"dir\"", "agent.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, Name+".service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 && strings.Contains(string(out), Name) {
		t.Fatalf("systemd-analyze verify: %v\n%s\nunit:\n%s", err, out, unit)
	}
	for _, want := range []string{"Delegate=yes", "KillMode=mixed", "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK",
		`ExecStart="` + exe + `" "--config" "` + dir + `/odd 100%% $$HOME \"dir\"/agent.yaml" "run"`} {
		if !strings.Contains(unit, want+"\n") {
			t.Errorf("unit lacks %q:\n%s", want, unit)
		}
	}
	// What must not be there: each would keep a plugin from its work.
	// RestrictNamespaces answers clone3() with ENOSYS, and every plugin start uses it.
	for _, banned := range []string{"ProtectHome", "PrivateTmp", "ProtectSystem", "CapabilityBoundingSet", "ProtectKernelTunables", "PrivateDevices", "RestrictNamespaces="} {
		if strings.Contains(unit, banned) {
			t.Errorf("unit has %s, which takes what a plugin needs:\n%s", banned, unit)
		}
	}
}

// TestSystemdUnitRealStartNeedsSystemdAsPID1 says why no test starts the unit here.
func TestSystemdUnitRealStartNeedsSystemdAsPID1(t *testing.T) {
	comm, _ := os.ReadFile("/proc/1/comm")
	if strings.TrimSpace(string(comm)) != "systemd" {
		t.Skipf("PID 1 is %q, not systemd: a real start of the unit cannot run on this machine (systemd-analyze verify checks the file)", strings.TrimSpace(string(comm)))
	}
	t.Skip("systemd is PID 1, but a test does not install a service on the machine it runs on: start it by hand with yuzu-agent service install (docs/operations.md)")
}

func TestSystemdUnitRefusesLineBreaks(t *testing.T) {
	if _, err := SystemdUnit(Spec{Exe: "/usr/bin/yuzu-agent", Config: "/etc/yuzu/a\nExecStartPre=/bin/evil"}); err == nil {
		t.Error("a configuration path with a line break went into the unit")
	}
	if _, err := LaunchdPlist(Spec{Exe: "", Config: "/c"}); err == nil {
		t.Error("an empty binary path went into the plist")
	}
}

// plistValue is a plist's dict as keys and the raw elements that follow them.
func plistDict(t *testing.T, text string) map[string]string {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(text))
	got := map[string]string{}
	var key string
	depth := 0
	var cur strings.Builder
	var inValue string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("plist is not well-formed XML: %v\n%s", err, text)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 3 && el.Name.Local == "key" {
				inValue = "key"
				cur.Reset()
			} else if depth == 3 {
				inValue = el.Name.Local
				cur.Reset()
				cur.WriteString("<" + el.Name.Local + ">")
			} else if depth > 3 {
				cur.WriteString("<" + el.Name.Local + ">")
			}
		case xml.CharData:
			if inValue != "" {
				cur.WriteString(strings.TrimSpace(string(el)))
			}
		case xml.EndElement:
			if depth == 3 && inValue == "key" {
				key = cur.String()
			} else if depth == 3 && inValue != "" {
				got[key] = cur.String()
			}
			depth--
		}
	}
	return got
}

func TestLaunchdPlistParses(t *testing.T) {
	p, err := LaunchdPlist(Spec{Exe: "/usr/local/bin/yuzu-agent", Config: "/Library/Application Support/yuzu/a&b <x>.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	d := plistDict(t, p)
	want := map[string]string{
		"Label":             "<string>" + LaunchdLabel,
		"ProgramArguments":  "<array><string>/usr/local/bin/yuzu-agent<string>--config<string>/Library/Application Support/yuzu/a&b <x>.yaml<string>run",
		"RunAtLoad":         "<true>",
		"KeepAlive":         "<dict><key>SuccessfulExit<false>",
		"ExitTimeOut":       "<integer>60",
		"StandardErrorPath": "<string>" + LaunchdStderrFile,
	}
	for k, v := range want {
		if d[k] != v {
			t.Errorf("%s = %q, want %q\n%s", k, d[k], v, p)
		}
	}
}

// TestWindowsServiceArgs checks what the SCM is given: the binary as it is and
// `--config FILE run`, with a path the Windows command line must quote kept whole,
// and the paths no definition can hold refused.
func TestWindowsServiceArgs(t *testing.T) {
	exe, args, err := WindowsService(Spec{Exe: `C:\Program Files\yuzu\yuzu-agent.exe`, Config: `C:\ProgramData\yuzu\agent.yaml`})
	if err != nil {
		t.Fatal(err)
	}
	if exe != `C:\Program Files\yuzu\yuzu-agent.exe` || strings.Join(args, "|") != `--config|C:\ProgramData\yuzu\agent.yaml|run` {
		t.Errorf("got %q %q", exe, args)
	}
	for _, bad := range []Spec{{Exe: "", Config: `C:\a.yaml`}, {Exe: `C:\a.exe`, Config: "C:\\a\n.yaml"}, {Exe: "C:\\a\x00.exe", Config: `C:\a.yaml`}} {
		if _, _, err := WindowsService(bad); err == nil {
			t.Errorf("WindowsService(%q) accepted", bad)
		}
	}
	if got := WindowsLogFile(`C:\ProgramData\yuzu`); got != `C:\ProgramData\yuzu\logs\agent.log` {
		t.Errorf("WindowsLogFile = %q", got)
	}
	if len(WindowsRestartDelays) == 0 || WindowsRestartDelays[0] <= 0 || WindowsResetPeriod < time.Hour {
		t.Errorf("recovery %v reset %v", WindowsRestartDelays, WindowsResetPeriod)
	}
}
