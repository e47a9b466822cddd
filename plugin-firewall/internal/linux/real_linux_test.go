package linux

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/sdk/rows"
)

// noBus points the firewalld rung at a socket that does not exist, so these tests do
// not depend on whether the machine runs a system bus.
func noBus(t *testing.T) {
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path="+filepath.Join(t.TempDir(), "no-bus"))
}

// inFreshNetns runs fn on a goroutine locked to an OS thread that has been moved into
// a new, empty network namespace. The thread is never unlocked, so Go discards it when
// fn returns and the namespace goes with it; nothing else in the process ever runs in
// it. Everything fn does on that goroutine (the reader opens its sockets there) sees
// only the new namespace.
func inFreshNetns(t testing.TB, fn func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("creating a network namespace needs root; running as euid %d", os.Geteuid())
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		fn()
		errc <- nil
	}()
	if err := <-errc; err != nil {
		t.Fatalf("unshare(CLONE_NEWNET) as root: %v (this kernel or sandbox gives no network namespaces)", err)
	}
}

// nftOnly is the real ladder with ufw absent, so an empty ruleset is the answer. The
// legacy tables are read for real: a fresh namespace has none, so no tool runs.
// (These tests move only their network namespace; running the host's ufw would touch
// the host's /run. The plugin's own tests run every tool in a namespace of its own.)
func nftOnly(t *testing.T) *Ladder {
	l := New()
	l.UfwPath = filepath.Join(t.TempDir(), "no-ufw")
	return l
}

// TestRealNftablesEmptyNamespace is the smoke test against the real kernel: a fresh
// network namespace has no nftables tables, which is a complete answer when no other
// backend answers.
func TestRealNftablesEmptyNamespace(t *testing.T) {
	noBus(t)
	var state, rules []rows.Row
	l := nftOnly(t)
	inFreshNetns(t, func() {
		state = l.State(context.Background())
		rules = l.Rules(context.Background())
	})
	rowsEqual(t, "state", state, "backend|nftables", "state|inactive", "ruleset|0")
	rowsEqual(t, "rules", rules, "backend|nftables", "ruleset|0")
}

// TestRealNftablesRuleset loads a small ruleset into a fresh namespace (with the same
// library, the only writer available without the nft binary) and reads it back.
func TestRealNftablesRuleset(t *testing.T) {
	noBus(t)
	var state, rules []rows.Row
	var loadErr error
	l := nftOnly(t)
	inFreshNetns(t, func() {
		c, err := nftables.New()
		if err != nil {
			loadErr = err
			return
		}
		tbl := c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: "filter"})
		drop := nftables.ChainPolicyDrop
		in := c.AddChain(&nftables.Chain{Name: "input", Table: tbl, Type: nftables.ChainTypeFilter,
			Hooknum: nftables.ChainHookInput, Priority: nftables.ChainPriorityFilter, Policy: &drop})
		custom := c.AddChain(&nftables.Chain{Name: "cus|tom", Table: tbl})
		c.AddRule(&nftables.Rule{Table: tbl, Chain: in, Exprs: []expr.Any{&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictAccept}}})
		c.AddRule(&nftables.Rule{Table: tbl, Chain: custom, Exprs: []expr.Any{&expr.Verdict{Kind: expr.VerdictDrop}}})
		if loadErr = c.Flush(); loadErr != nil {
			return
		}
		state = l.State(context.Background())
		rules = l.Rules(context.Background())
	})
	if loadErr != nil {
		t.Fatalf("loading the test ruleset: %v", loadErr)
	}
	rowsEqual(t, "state", state, "backend|nftables", "state|active", "ruleset|2")
	texts := rows.Texts(rules)
	if len(texts) != 5 || texts[0] != "backend|nftables" || texts[1] != "rule|nftables|inet|filter|input|input|drop" ||
		texts[4] != "ruleset|2" {
		t.Fatalf("rules rows %q", texts)
	}
	for i, chain := range []string{"input", "cus_tom"} {
		re := regexp.MustCompile(`^rule\|nftables\|inet\|filter\|` + regexp.QuoteMeta(chain) + `\|handle\|[1-9][0-9]*$`)
		if !re.MatchString(texts[2+i]) {
			t.Errorf("rule row %q does not match %s", texts[2+i], re)
		}
	}
}

// TestRealNftablesSocketDeadline checks that the real netlink socket honours the
// deadline the reader sets, for the table dump and for the per-chain rule requests
// (whose errors the library hands back as text).
func TestRealNftablesSocketDeadline(t *testing.T) {
	var table, rule NftResult
	inFreshNetns(t, func() {
		past := func(c *netlink.Conn, _ time.Time) error { return c.SetDeadline(time.Unix(1, 0)) }
		r := newNftReader()
		r.setDeadline = past
		table = r.Read(context.Background())

		c, _ := nftables.New()
		tbl := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: "t"})
		c.AddChain(&nftables.Chain{Name: "c", Table: tbl})
		if err := c.Flush(); err != nil {
			t.Errorf("loading: %v", err)
			return
		}
		r = newNftReader()
		calls := 0
		r.setDeadline = func(c *netlink.Conn, d time.Time) error {
			calls++
			if calls > 2 { // tables and chains get their real deadline, rules one in the past
				return past(c, d)
			}
			return c.SetDeadline(d)
		}
		rule = r.Read(context.Background())
	})
	rowsEqual(t, "table", table.Diag, "error|nftables:table:timeout")
	rowsEqual(t, "rule", rule.Diag, "fallthrough|nftables:rule:timeout")
	if !rule.TablesSeen {
		t.Errorf("tables were read but not reported as seen: %+v", rule)
	}
}

// TestRealNftablesRuleSocket checks the shared rule socket against the real kernel:
// several chains are read on one socket, every socket a read opens is closed when it
// ends, and the deadline set when the rule socket was opened still bounds a question
// asked on it later.
func TestRealNftablesRuleSocket(t *testing.T) {
	var res, late NftResult
	var socks []*netlink.Conn
	var loadErr error
	ruleNows := -1
	inFreshNetns(t, func() {
		if loadErr = loadChains(3, 2); loadErr != nil {
			return
		}
		r := newNftReader()
		r.setDeadline = func(c *netlink.Conn, d time.Time) error {
			socks = append(socks, c)
			return c.SetDeadline(d)
		}
		res = r.Read(context.Background())

		// The rule socket gets a deadline of its own, well before the rule cut-off,
		// and the clock stalls past it before the second chain is asked: only the
		// socket's deadline can end that question.
		r = newNftReader()
		opened := 0
		r.setDeadline = func(c *netlink.Conn, d time.Time) error {
			if opened++; opened == 3 {
				ruleNows = 0
				return c.SetDeadline(time.Now().Add(300 * time.Millisecond))
			}
			return c.SetDeadline(d)
		}
		r.now = func() time.Time {
			if ruleNows >= 0 {
				if ruleNows++; ruleNows == 2 {
					time.Sleep(600 * time.Millisecond)
				}
			}
			return time.Now()
		}
		late = r.Read(context.Background())
	})
	if loadErr != nil {
		t.Fatalf("loading the test ruleset: %v", loadErr)
	}
	if !res.Answered || len(res.Rules) != 6 || len(res.Diag) != 0 {
		t.Fatalf("result %+v", res)
	}
	if len(socks) != 3 {
		t.Errorf("%d sockets opened, want 3 (tables, chains, rules)", len(socks))
	}
	for i, c := range socks {
		// An open socket takes a new deadline; a closed one refuses it.
		if err := c.SetDeadline(time.Time{}); err == nil {
			t.Errorf("socket %d is still open after the read", i)
		}
	}
	rowsEqual(t, "late rule question", late.Diag, "fallthrough|nftables:rule:timeout")
	if ruleNows < 2 {
		t.Errorf("the second chain was never reached (%d clock reads in the rule request)", ruleNows)
	}
}

// childCommand re-executes this test binary in a helper mode.
func childCommand(t *testing.T, mode string, bin string) *exec.Cmd {
	t.Helper()
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	return cmd
}

func childRows(t *testing.T, cmd *exec.Cmd) []string {
	t.Helper()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
}

// TestRealNftablesUnprivileged measures the path a non-root agent takes: the kernel
// refuses the table dump, ufw refuses to run for anyone but root, and the kernel's
// lists of legacy tables are readable by root alone: nothing could be read, and the
// answer says so. It runs the test binary as nobody in a fresh namespace. (The
// plugin's own tests run the same case with the binaries present and hidden.)
func TestRealNftablesUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skipf("switching to another user needs root; running as euid %d", os.Geteuid())
	}
	want := []string{"error|nftables:table:eperm"}
	// A family whose table module is not loaded has no list to refuse.
	for _, src := range DefaultLegacySources {
		if _, err := os.Stat(filepath.Join("/proc/self/net", src.names)); err == nil {
			want = append(want, legacyDiagRow(src.family, "eperm").Text())
		}
	}
	backend := "backend|none"
	if len(want) == 1 { // no legacy list at all: that side was read whole
		backend = "backend|iptables"
	}
	want = append(want, backend, "state|unknown", "ruleset|unknown")
	// A copy of the binary that nobody may execute.
	dir, err := os.MkdirTemp("", "fwtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "linux.test")
	if err := copyFile(self, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := childCommand(t, "state", bin)
	cmd.Env = append(cmd.Env, "DBUS_SYSTEM_BUS_ADDRESS=unix:path="+filepath.Join(dir, "no-bus"))
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNET,
		Credential: &syscall.Credential{Uid: 65534, Gid: 65534},
	}
	got := childRows(t, cmd)
	if !slices.Equal(got, want) {
		t.Errorf("unprivileged state %q, want %q", got, want)
	}
}

// TestRealNftablesFdExhausted runs the reader in a child that has used up its file
// descriptors.
func TestRealNftablesFdExhausted(t *testing.T) {
	got := childRows(t, childCommand(t, "fd-exhausted", ""))
	if want := []string{"error|fd_exhausted"}; !slices.Equal(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// BenchmarkRealNftablesRead measures a full read (tables, chains, then one rule
// request per chain) of a ruleset shaped like a busy container host: many regular
// chains with a few rules each. It also reports how many sockets a read opens, counted
// where each one is bounded, and the processor time the reading thread spent per read
// (user and kernel), which a busy machine disturbs far less than the elapsed time.
func BenchmarkRealNftablesRead(b *testing.B) {
	for _, chains := range []int{10, 100, 1000} {
		b.Run(strconv.Itoa(chains)+"chains", func(b *testing.B) {
			inFreshNetns(b, func() {
				if err := loadChains(chains, 5); err != nil {
					b.Error(err)
					return
				}
				r := newNftReader()
				sockets, reads := 0, 0
				r.setDeadline = func(c *netlink.Conn, t time.Time) error {
					sockets++
					return c.SetDeadline(t)
				}
				before := threadCPU(b)
				b.ResetTimer()
				for b.Loop() {
					reads++
					if res := r.Read(context.Background()); !res.Answered || len(res.Rules) != 5*chains {
						b.Errorf("read %d rules: %+v", len(res.Rules), res.Diag)
						return
					}
				}
				b.ReportMetric(float64(sockets)/float64(reads), "sockets/op")
				b.ReportMetric(float64((threadCPU(b)-before).Microseconds())/float64(reads), "cpu-us/op")
			})
		})
	}
}

// threadCPU is the user and kernel time the calling thread has used. The benchmark
// runs on a goroutine locked to its thread, so this is the time its reads cost.
func threadCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadChains creates one table holding n regular chains of perChain rules each.
func loadChains(n, perChain int) error {
	c, err := nftables.New()
	if err != nil {
		return err
	}
	tbl := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: "bench"})
	for i := range n {
		ch := c.AddChain(&nftables.Chain{Name: "chain" + strconv.Itoa(i), Table: tbl})
		for range perChain {
			c.AddRule(&nftables.Rule{Table: tbl, Chain: ch,
				Exprs: []expr.Any{&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictAccept}}})
		}
		if i%10 == 9 { // small batches: each message is acknowledged, and the acks must fit the socket buffer
			if err := c.Flush(); err != nil {
				return err
			}
		}
	}
	return c.Flush()
}
