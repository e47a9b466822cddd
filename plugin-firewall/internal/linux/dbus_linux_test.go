package linux

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// startBus runs a private dbus-daemon for one test and returns its address. The
// firewalld rung then talks to a real bus through the real client library, with a
// fake firewalld exported on it.
func startBus(t *testing.T) string {
	t.Helper()
	daemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		t.Fatal("dbus-daemon is not installed (Debian package dbus-daemon; scripts/deps.sh installs it): " +
			"the private-bus tests cannot run without it")
	}
	// Not t.TempDir: its name holds the test's name, and a comma or semicolon there
	// would split the D-Bus address.
	dir, err := os.MkdirTemp("", "fwbus-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "bus")
	conf := filepath.Join(dir, "bus.conf")
	config := `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <listen>unix:path=` + sock + `</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/><allow own="*"/>
    <allow send_destination="*"/><allow receive_sender="*"/>
  </policy>
</busconfig>
`
	if err := os.WriteFile(conf, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(daemon, "--config-file="+conf, "--nofork", "--nopidfile")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	// Should the test binary die before its cleanups run, the bus dies with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("dbus-daemon: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// The socket file appears before the daemon listens on it, so wait until a
	// connection is accepted.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("unix", sock); err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dbus-daemon did not start listening: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "unix:path=" + sock
}

// exportFake publishes obj on the bus at addr as firewalld, one method map per
// interface, mapping the lower-case D-Bus method names onto the Go methods.
func exportFake(t *testing.T, addr string, obj any, ifaces map[string]map[string]string) *dbus.Conn {
	t.Helper()
	srv, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	for iface, methods := range ifaces {
		if err := srv.ExportWithMap(obj, methods, firewalldPath, iface); err != nil {
			t.Fatal(err)
		}
	}
	reply, err := srv.RequestName(firewalldDest, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("RequestName: %v %v", reply, err)
	}
	return srv
}

// goodFirewalld is a firewalld 1.x with one zone bound, the default zone and one
// active policy.
type goodFirewalld struct{}

func (goodFirewalld) GetActiveZones() (map[string]map[string][]string, *dbus.Error) {
	return map[string]map[string][]string{"public": {"interfaces": {"veth0"}}}, nil
}

func (goodFirewalld) GetDefaultZone() (string, *dbus.Error) { return "trusted", nil }

func (goodFirewalld) GetZoneSettings2(zone string) (map[string]dbus.Variant, *dbus.Error) {
	switch zone {
	case "public":
		return settings("target", "default", "interfaces", []string{"veth0"}, "services", []string{"ssh", "https"},
			"ports", []struct{ Port, Proto string }{{"8080", "tcp"}}), nil
	case "trusted":
		return settings("target", "ACCEPT"), nil
	}
	return nil, dbus.NewError("org.fedoraproject.FirewallD1.Exception", []any{"INVALID_ZONE: " + zone})
}

func (goodFirewalld) GetActivePolicies() (map[string]map[string][]string, *dbus.Error) {
	return map[string]map[string][]string{"p": {"ingress_zones": {"ANY"}, "egress_zones": {"HOST"}}}, nil
}

func (goodFirewalld) GetPolicySettings(string) (map[string]dbus.Variant, *dbus.Error) {
	return settings("target", "CONTINUE", "priority", int32(-1), "masquerade", false,
		"ingress_zones", []string{"ANY"}, "egress_zones", []string{"HOST"}), nil
}

var firewalld1x = map[string]map[string]string{
	firewalldZones:  {"GetActiveZones": "getActiveZones", "GetZoneSettings2": "getZoneSettings2"},
	firewalldMain:   {"GetDefaultZone": "getDefaultZone"},
	firewalldPolicy: {"GetActivePolicies": "getActivePolicies", "GetPolicySettings": "getPolicySettings"},
}

// oldFirewalld is a firewalld before 0.9: no getZoneSettings2, no policies, and zone
// settings as a fixed tuple.
type oldFirewalld struct{ goodFirewalld }

type port struct{ Port, Proto string }
type forwardPort struct{ Port, Proto, ToPort, ToAddr string }

// zoneTuple is the (sssbsasa(ss)asba(ssss)asasasasa(ss)b) of getZoneSettings.
type zoneTuple struct {
	Version, Short, Description string
	Unused                      bool
	Target                      string
	Services                    []string
	Ports                       []port
	IcmpBlocks                  []string
	Masquerade                  bool
	ForwardPorts                []forwardPort
	Interfaces, Sources, Rules  []string
	Protocols                   []string
	SourcePorts                 []port
	IcmpBlockInversion          bool
}

func (oldFirewalld) GetZoneSettings(zone string) (zoneTuple, *dbus.Error) {
	if zone == "public" {
		return zoneTuple{Target: "{chain}_{zone}", Services: []string{"ssh"}, Ports: []port{{"8080", "tcp"}},
			ForwardPorts: []forwardPort{{"80", "tcp", "8080", ""}}, Interfaces: []string{"veth0"}}, nil
	}
	return zoneTuple{Target: "ACCEPT"}, nil
}

var firewalldOld = map[string]map[string]string{
	firewalldZones: {"GetActiveZones": "getActiveZones"},
	firewalldMain:  {"GetDefaultZone": "getDefaultZone", "GetZoneSettings": "getZoneSettings"},
}

// wrongZones answers getActiveZones with a{ss} instead of a{sa{sas}}.
type wrongZones struct{ goodFirewalld }

func (wrongZones) GetActiveZones() (map[string]string, *dbus.Error) {
	return map[string]string{"public": "veth0"}, nil
}

// wrongSettings answers getZoneSettings2 with an integer.
type wrongSettings struct{ goodFirewalld }

func (wrongSettings) GetZoneSettings2(string) (int32, *dbus.Error) { return 7, nil }

// failingSettings answers getActiveZones but refuses getZoneSettings2 with
// firewalld's own error, as it does for a zone removed between the two calls.
type failingSettings struct{ goodFirewalld }

func (failingSettings) GetZoneSettings2(zone string) (map[string]dbus.Variant, *dbus.Error) {
	return nil, dbus.NewError("org.fedoraproject.FirewallD1.Exception", []any{"INVALID_ZONE: " + zone})
}

// slowSettings does not answer getZoneSettings2 until released.
type slowSettings struct {
	goodFirewalld
	release chan struct{}
}

func (s slowSettings) GetZoneSettings2(zone string) (map[string]dbus.Variant, *dbus.Error) {
	<-s.release
	return s.goodFirewalld.GetZoneSettings2(zone)
}

func TestRealBusFirewalld(t *testing.T) {
	addr := startBus(t)
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", addr)

	// Nobody owns firewalld's name yet: the rung falls through.
	if got := queryFirewalld(context.Background(), FirewalldBudget, connectSystemBus); got.Reachable {
		t.Fatalf("firewalld not running but reachable: %+v", got)
	}

	srv := exportFake(t, addr, goodFirewalld{}, firewalld1x)
	l := New()
	rowsEqual(t, "state", l.State(context.Background()), "backend|firewalld", "state|running", "ruleset|3")
	rowsEqual(t, "rules", l.Rules(context.Background()),
		"backend|firewalld",
		"rule|firewalld|public|target|default",
		"rule|firewalld|public|interface|veth0",
		"rule|firewalld|public|service|ssh",
		"rule|firewalld|public|service|https",
		"rule|firewalld|public|port|8080/tcp",
		"rule|firewalld|trusted|target|ACCEPT",
		"rule|firewalld|policy:p|target|CONTINUE",
		"rule|firewalld|policy:p|ingress-zone|ANY",
		"rule|firewalld|policy:p|egress-zone|HOST",
		"ruleset|3")

	// firewalld stops: its name is released and the bus answers ServiceUnknown, so
	// the rung falls through again.
	if _, err := srv.ReleaseName(firewalldDest); err != nil {
		t.Fatal(err)
	}
	if got := queryFirewalld(context.Background(), FirewalldBudget, connectSystemBus); got.Reachable {
		t.Errorf("firewalld stopped but reachable: %+v", got)
	}
}

// TestRealBusOldFirewalld is a firewalld that predates getZoneSettings2 and policies:
// the bus answers "unknown method", and the tuple form is read instead.
func TestRealBusOldFirewalld(t *testing.T) {
	addr := startBus(t)
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", addr)
	exportFake(t, addr, oldFirewalld{}, firewalldOld)
	rowsEqual(t, "rules", firewalldRows(queryFirewalld(context.Background(), FirewalldBudget, connectSystemBus), true),
		"backend|firewalld",
		"rule|firewalld|public|target|default",
		"rule|firewalld|public|interface|veth0",
		"rule|firewalld|public|service|ssh",
		"rule|firewalld|public|port|8080/tcp",
		"rule|firewalld|public|forward-port|port=80:proto=tcp:toport=8080:toaddr=",
		"rule|firewalld|trusted|target|ACCEPT",
		"ruleset|3")
}

// TestRealBusWrongTypes covers a firewalld that answers getActiveZones and then
// fails: a reply of the wrong type, or an error. firewalld owns the answer, but it is
// incomplete, so nothing is listed and the count is unknown.
func TestRealBusWrongTypes(t *testing.T) {
	tests := []struct {
		name string
		obj  any
	}{
		{"active zones as a string map", wrongZones{}},
		{"settings as int32", wrongSettings{}},
		{"settings call fails", failingSettings{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := startBus(t)
			t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", addr)
			exportFake(t, addr, tt.obj, firewalld1x)
			got := queryFirewalld(context.Background(), FirewalldBudget, connectSystemBus)
			if !got.Reachable || got.Complete {
				t.Errorf("got %+v, want reachable and incomplete", got)
			}
			rowsEqual(t, "rows", firewalldRows(got, false), "backend|firewalld", "state|running", "ruleset|unknown")
		})
	}
}

func TestRealBusBudget(t *testing.T) {
	addr := startBus(t)
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", addr)
	slow := slowSettings{release: make(chan struct{})}
	defer close(slow.release)
	exportFake(t, addr, slow, firewalld1x)
	// The budget leaves connecting and listing zones ample time even on a loaded
	// machine; only getZoneSettings2 runs into it.
	const budget = 1500 * time.Millisecond
	start := time.Now()
	got := queryFirewalld(context.Background(), budget, connectSystemBus)
	if d := time.Since(start); d < budget || d > budget+2*time.Second {
		t.Errorf("took %v with a %v budget", d, budget)
	}
	if !got.Reachable || got.Complete {
		t.Errorf("got %+v, want reachable and incomplete", got)
	}
}

func TestRealBusUnresponsive(t *testing.T) {
	// A socket that accepts connections but never speaks: the authentication
	// handshake must not outlive the budget.
	dir := t.TempDir()
	sock := filepath.Join(dir, "mute")
	ln, err := listenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path="+sock)
	start := time.Now()
	got := queryFirewalld(context.Background(), 200*time.Millisecond, connectSystemBus)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v with a 200ms budget", d)
	}
	if got.Reachable {
		t.Errorf("mute bus counted as reachable: %+v", got)
	}
}

func TestSystemBusAddress(t *testing.T) {
	tests := []struct {
		env  string
		want string
		ok   bool
	}{
		{"", defaultSystemBus, true},
		{"unix:path=/run/x", "unix:path=/run/x", true},
		{"unix:path=/a;unix:abstract=b", "unix:path=/a;unix:abstract=b", true},
		{"tcp:host=127.0.0.1,port=1", "", false},
		{"unixexec:path=/bin/sh", "", false},
		{"unix:path=/a;tcp:host=x", "", false},
	}
	for _, tt := range tests {
		t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", tt.env)
		got, err := systemBusAddress()
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("%q: got %q, %v", tt.env, got, err)
		}
	}
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "tcp:host=127.0.0.1,port=1")
	if got := queryFirewalld(context.Background(), FirewalldBudget, connectSystemBus); got.Reachable {
		t.Errorf("refused address reachable: %+v", got)
	}
}

func listenUnix(path string) (*net.UnixListener, error) {
	return net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
}
