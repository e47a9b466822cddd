package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/sdktest"
)

// The real-backend tests give every backend a network namespace of its own and run
// the real plugin binary inside it, so the host's firewall is only ever read, never
// changed. Inside, a private mount namespace (ip netns exec makes one) puts the
// files the tools write out of the host's reach: a private /run for the lock files,
// private copies of /etc/ufw and /etc/firewalld, and, where a rung must be reached,
// iptables-legacy behind every iptables name or binaries hidden. docs/firewall.md
// describes the setup.

// testbedPrefix names every namespace these tests create, followed by the test
// process's pid, so a crashed run's namespaces can be told apart and removed.
const testbedPrefix = "yuzufw-"

var testbedSeq atomic.Int64

// needRoot skips a test that cannot run without root, the one reason a real-backend
// test may give for not running.
func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root to create network namespaces and run firewall tools; running as euid %d", os.Geteuid())
	}
}

// needTools fails the test when a tool it needs is missing: scripts/deps.sh installs
// them, so a missing one is a broken machine, not a reason to skip.
func needTools(t testing.TB, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing (scripts/deps.sh installs it): %v", p, err)
		}
	}
}

// testbed is one network namespace and the private files of the processes run in it.
type testbed struct {
	t    testing.TB
	name string
	dir  string
	seq  int
}

// newTestbed creates an empty network namespace. Cleanups run in reverse order of
// registration, so everything started in the namespace afterwards (the plugin,
// firewalld, a bus) is stopped before the namespace is deleted, and the namespace
// before its files are removed.
func newTestbed(t testing.TB) *testbed {
	t.Helper()
	needRoot(t)
	needTools(t, "/usr/sbin/ip")
	dir, err := os.MkdirTemp("", "fwbed-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	// Traversable by nobody, for the unprivileged runs; nothing in it is secret.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("%s%d-%d", testbedPrefix, os.Getpid(), testbedSeq.Add(1))
	if out, err := exec.Command("/usr/sbin/ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("/usr/sbin/ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v\n%s", name, err, out)
		}
	})
	return &testbed{t: t, name: name, dir: dir}
}

// removeStaleTestbeds deletes the namespaces a test run that died before its
// cleanups left behind: those with this suite's prefix whose process is gone.
func removeStaleTestbeds() {
	entries, err := os.ReadDir("/run/netns")
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), testbedPrefix)
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		_ = exec.Command("/usr/sbin/ip", "netns", "del", e.Name()).Run()
	}
}

// setup says how a process started in the testbed sees the machine.
type setup struct {
	// legacy binds xtables-legacy-multi over xtables-nft-multi, so every iptables
	// name runs iptables-legacy, whose tables nftables cannot see.
	legacy bool
	// ufw gives the namespace private copies of /etc/ufw and /etc/default/ufw.
	ufw bool
	// firewalld gives the namespace the private /etc/firewalld of startFirewalld.
	firewalld bool
	// hide makes these names in /usr/sbin vanish (overlay whiteouts).
	hide []string
	// hideSbin hides all of /usr/sbin behind an empty tmpfs.
	hideSbin bool
	// bus is the DBUS_SYSTEM_BUS_ADDRESS; empty means a socket that does not exist,
	// so the firewalld rung never depends on the machine.
	bus string
	// nobody runs the process as uid and gid 65534 once the mounts are made.
	nobody bool
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// prelude writes the script that makes s's mounts inside the namespace's private
// mount namespace and then executes its arguments, and returns its path.
func (tb *testbed) prelude(s setup) string {
	tb.t.Helper()
	d := func(name string) string { return shellQuote(filepath.Join(tb.dir, name)) }
	lines := []string{"set -e", "mount -n --bind " + d("run") + " /run"}
	if s.ufw {
		tb.copyOnce("/etc/ufw", "etc-ufw")
		tb.copyOnce("/etc/default/ufw", "default-ufw")
		lines = append(lines, "mount -n --bind "+d("etc-ufw")+" /etc/ufw", "mount -n --bind "+d("default-ufw")+" /etc/default/ufw")
	}
	if s.firewalld {
		lines = append(lines, "mount -n --bind "+d("etc-firewalld")+" /etc/firewalld")
	}
	if len(s.hide) > 0 {
		// A read-only overlay whose top layer holds a whiteout (a 0:0 character
		// device) for each name: exec then fails with ENOENT, as for a tool that is
		// not installed. The tmpfs lives in this mount namespace only.
		lines = append(lines, "mkdir -p "+d("wh"), "mount -n -t tmpfs fwtest-wh "+d("wh"), "mkdir "+d("wh/l"))
		for _, name := range s.hide {
			lines = append(lines, "mknod "+d("wh/l/"+name)+" c 0 0")
		}
		lines = append(lines, "mount -n -t overlay fwtest-hide -o lowerdir="+filepath.Join(tb.dir, "wh/l")+":/usr/sbin /usr/sbin")
	}
	if s.hideSbin {
		lines = append(lines, "mount -n -t tmpfs -o size=64k,mode=755 fwtest-empty /usr/sbin")
	}
	// After the hiding: an overlay shows the directory below it, not what is mounted
	// on its entries, so a bind made first would vanish under it.
	if s.legacy {
		lines = append(lines, "mount -n --bind /usr/sbin/xtables-legacy-multi /usr/sbin/xtables-nft-multi")
	}
	lines = append(lines, `exec "$@"`)
	tb.seq++
	path := filepath.Join(tb.dir, fmt.Sprintf("prelude-%d.sh", tb.seq))
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		tb.t.Fatal(err)
	}
	return path
}

// copyOnce copies src into the testbed under name, the first time it is asked for.
func (tb *testbed) copyOnce(src, name string) {
	tb.t.Helper()
	dst := filepath.Join(tb.dir, name)
	if _, err := os.Stat(dst); err == nil {
		return
	}
	needTools(tb.t, src)
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		tb.t.Fatalf("cp -a %s: %v\n%s", src, err, out)
	}
}

func (tb *testbed) busAddress(s setup) string {
	if s.bus != "" {
		return s.bus
	}
	return "unix:path=" + filepath.Join(tb.dir, "no-bus")
}

// argv is the command line that runs argv inside the namespace with s applied.
func (tb *testbed) argv(s setup, argv ...string) []string {
	out := []string{"/usr/sbin/ip", "netns", "exec", tb.name, "/bin/sh", tb.prelude(s)}
	if s.nobody {
		out = append(out, "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
	}
	return append(out, argv...)
}

// run runs a command inside the namespace and returns its output; a failure fails
// the test.
func (tb *testbed) run(s setup, argv ...string) string {
	tb.t.Helper()
	full := tb.argv(s, argv...)
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "DBUS_SYSTEM_BUS_ADDRESS=" + tb.busAddress(s), "LC_ALL=C"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.t.Fatalf("in %s: %s: %v\n%s", tb.name, strings.Join(argv, " "), err, out)
	}
	return string(out)
}

// loadNft loads an nftables ruleset into the namespace.
func (tb *testbed) loadNft(ruleset string) {
	tb.t.Helper()
	needTools(tb.t, "/usr/sbin/nft")
	path := filepath.Join(tb.dir, fmt.Sprintf("ruleset-%d.nft", tb.seq))
	if err := os.WriteFile(path, []byte(ruleset), 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.run(setup{}, "/usr/sbin/nft", "-f", path)
}

// loadLegacy loads iptables-legacy-restore files into the namespace: the IPv4 file,
// then the IPv6 one. Their tables are invisible to nftables.
func (tb *testbed) loadLegacy(v4, v6 string) {
	tb.t.Helper()
	needTools(tb.t, "/usr/sbin/iptables-legacy-restore", "/usr/sbin/ip6tables-legacy-restore")
	tb.run(setup{}, "/usr/sbin/iptables-legacy-restore", v4)
	tb.run(setup{}, "/usr/sbin/ip6tables-legacy-restore", v6)
}

// pluginBin returns the plugin binary, built once for the run by sdktest.Build for
// the tests that run it inside a network namespace. sdktest keeps it where everyone
// may read it, so a testbed can run it as nobody.
func pluginBin(t testing.TB) string {
	t.Helper()
	return sdktest.Build(t, ".")
}

// startPlugin starts the real plugin binary inside the namespace, through the real
// go-plugin handshake (sdktest.Start), and returns the harness. The plugin is
// stopped when the test ends, before anything else of the testbed.
func (tb *testbed) startPlugin(s setup) *sdktest.Harness {
	tb.t.Helper()
	return tb.startBinary(pluginBin(tb.t), s)
}

// startBinary is startPlugin for the plugin binary at bin.
func (tb *testbed) startBinary(bin string, s setup) *sdktest.Harness {
	tb.t.Helper()
	needTools(tb.t, "/usr/bin/setpriv")
	var script strings.Builder
	script.WriteString("#!/bin/sh\n")
	script.WriteString("export DBUS_SYSTEM_BUS_ADDRESS=" + shellQuote(tb.busAddress(s)) + "\n")
	script.WriteString("exec")
	for _, a := range tb.argv(s, bin) {
		script.WriteString(" " + shellQuote(a))
	}
	script.WriteString("\n")
	tb.seq++
	wrapper := filepath.Join(tb.dir, fmt.Sprintf("plugin-%d.sh", tb.seq))
	if err := os.WriteFile(wrapper, []byte(script.String()), 0o755); err != nil {
		tb.t.Fatal(err)
	}
	return sdktest.Start(tb.t, wrapper, sdk.Config{})
}

// daemon is a long-running process started for a test.
type daemon struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startDaemon starts argv with env and stops it when the test ends: SIGTERM, then
// SIGKILL after five seconds. It also dies with the test process, should that die
// before its cleanups run.
func startDaemon(t testing.TB, env []string, stderr *syncBuffer, argv ...string) *daemon {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", argv[0], err)
	}
	d := &daemon{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-d.done
		}
	})
	return d
}

// syncBuffer collects a daemon's output for the failure message.
type syncBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// startBus starts a private dbus-daemon whose socket lives in the testbed's
// directory and returns its address. It is the "system bus" of the processes the
// test points at it; the machine's own bus, if any, is never used.
func (tb *testbed) startBus() string {
	tb.t.Helper()
	needTools(tb.t, "/usr/bin/dbus-daemon")
	sock := filepath.Join(tb.dir, "bus")
	conf := filepath.Join(tb.dir, "bus.conf")
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
	if err := os.WriteFile(conf, []byte(config), 0o644); err != nil {
		tb.t.Fatal(err)
	}
	out := &syncBuffer{}
	d := startDaemon(tb.t, []string{"PATH=/usr/bin:/bin"}, out,
		"/usr/bin/dbus-daemon", "--config-file="+conf, "--nofork", "--nopidfile")
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("unix", sock); err == nil {
			_ = c.Close()
			break
		}
		select {
		case <-d.done:
			tb.t.Fatalf("dbus-daemon exited: %s", out)
		default:
		}
		if time.Now().After(deadline) {
			tb.t.Fatalf("dbus-daemon did not start listening: %s", out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "unix:path=" + sock
}

// startFirewalld runs the real firewalld inside the namespace, on the private bus at
// bus, with the host's /etc/firewalld copied, these zone files added and, unless it
// is empty, defaultZone as its default zone, and waits until it reports RUNNING. Its
// nftables table lives in the namespace and goes with it; the host's firewall is
// untouched.
func (tb *testbed) startFirewalld(bus, defaultZone string, zones map[string]string) {
	tb.t.Helper()
	needTools(tb.t, "/usr/sbin/firewalld")
	tb.copyOnce("/etc/firewalld", "etc-firewalld")
	if err := os.MkdirAll(filepath.Join(tb.dir, "etc-firewalld", "zones"), 0o755); err != nil {
		tb.t.Fatal(err)
	}
	if defaultZone != "" {
		conf := filepath.Join(tb.dir, "etc-firewalld", "firewalld.conf")
		b, err := os.ReadFile(conf)
		if err != nil {
			tb.t.Fatal(err)
		}
		text := regexp.MustCompile(`(?m)^DefaultZone=.*$`).ReplaceAllString(string(b), "DefaultZone="+defaultZone)
		if !strings.Contains(text, "DefaultZone="+defaultZone) {
			tb.t.Fatalf("%s has no DefaultZone line to change", conf)
		}
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			tb.t.Fatal(err)
		}
	}
	for name, xml := range zones {
		if err := os.WriteFile(filepath.Join(tb.dir, "etc-firewalld", "zones", name+".xml"), []byte(xml), 0o644); err != nil {
			tb.t.Fatal(err)
		}
	}
	log := filepath.Join(tb.dir, "firewalld.log")
	out := &syncBuffer{}
	argv := tb.argv(setup{firewalld: true, bus: bus},
		"/usr/sbin/firewalld", "--nofork", "--nopid", "--log-target", "file", "--log-file", log)
	// ip netns exec, the prelude and its shell all exec, so the process stopped at
	// cleanup is firewalld itself.
	d := startDaemon(tb.t, []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "DBUS_SYSTEM_BUS_ADDRESS=" + bus}, out, argv...)

	// firewalld takes its bus name before it has loaded its configuration, so the
	// name is not enough: wait for its state property to read RUNNING.
	conn, err := dbus.Connect(bus)
	if err != nil {
		tb.t.Fatal(err)
	}
	defer conn.Close()
	obj := conn.Object("org.fedoraproject.FirewallD1", "/org/fedoraproject/FirewallD1")
	var state string
	// firewalld is Python: at load 45 it took over 30 s to start. The loop ends as
	// soon as it runs; the bound only stops a firewalld that never will.
	const bound = 180 * time.Second
	for deadline := time.Now().Add(bound); ; {
		v, err := obj.GetProperty("org.fedoraproject.FirewallD1.state")
		if err == nil {
			state, _ = v.Value().(string)
			if state == "RUNNING" {
				return
			}
		}
		select {
		case <-d.done:
			logText, _ := os.ReadFile(log)
			tb.t.Fatalf("firewalld exited before RUNNING: %s\n%s", out, logText)
		default:
		}
		if time.Now().After(deadline) {
			logText, _ := os.ReadFile(log)
			tb.t.Fatalf("firewalld not RUNNING after %v (state %q, last error %v): %s\n%s", bound, state, err, out, logText)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runAction runs action on the plugin and checks what every firewall action must
// do whatever it found: rc 0 and no typed status.
func runAction(t testing.TB, h *sdktest.Harness, action string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o, err := h.RunContext(ctx, action, nil)
	if err != nil {
		t.Fatalf("%s: %v", action, err)
	}
	if o.Result != sdk.Done() {
		t.Errorf("%s: result %+v, want rc 0 and UNDECLARED / UNKNOWN\n%s", action, o.Result, o)
	}
	return o.Rows
}
