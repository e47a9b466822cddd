package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
	"github.com/yuzugo/yuzu/sdk/sdktest"
)

func TestMain(m *testing.M) {
	if strings.HasPrefix(filepath.Base(os.Args[0]), selfPluginName) {
		// This is the copy made by runAsPlugin, started as the plugin.
		main()
		return
	}
	if reason := sdktest.NoGo(); reason != "" {
		os.Exit(runAsPlugin(m, reason))
	}
	sdktest.Main(m)
}

// selfBin is the copy of this test binary that serves as the plugin where the plugin
// cannot be built, else "".
var selfBin string

// pluginBin returns the plugin binary for the tests that run it as a child: the one
// sdktest.Build makes once for the run (where everyone may read it, so a child can
// run as another user), or the copy of this test binary where there is no go command.
func pluginBin(t testing.TB) string {
	t.Helper()
	if selfBin != "" {
		return selfBin
	}
	return sdktest.Build(t, ".")
}

// runAsPlugin runs the tests with a copy of this test binary as the plugin. Without a
// go command (the Windows leg's test binary, under Wine) the plugin cannot be built;
// copied under selfPluginName, the test binary runs main, not the tests, so the
// children still run the plugin's own code over go-plugin.
func runAsPlugin(m *testing.M, reason string) int {
	fmt.Fprintln(os.Stderr, "plugin-tags tests: the test binary itself serves as the plugin:", reason)
	dir, err := os.MkdirTemp("", "yuzu-plugin-tags-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// Readable and executable by everyone, so the child can run as another user.
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	selfBin = filepath.Join(dir, selfPluginName+".exe")
	if err := copySelf(selfBin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// selfPluginName names the copy of the test binary that runs as the plugin.
const selfPluginName = "yuzu-plugin-tags-self"

// copySelf copies the running test binary to dst.
func copySelf(dst string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(self)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o755)
}

// syncBuffer is a bytes.Buffer safe for the go-plugin stderr reader and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// child is a plugin process started without sdktest, for what sdktest.Start does not
// offer: the child's raw stderr and changes to its command (another user).
type child struct {
	t      *testing.T
	client *host.Client
	stderr *syncBuffer
}

func startChild(t *testing.T, cfg sdk.Config, prepare func(*exec.Cmd)) *child {
	t.Helper()
	cmd := exec.Command(pluginBin(t))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if prepare != nil {
		prepare(cmd)
	}
	stderr := &syncBuffer{}
	pc := host.ClientConfig(cmd)
	pc.Stderr = stderr
	pc.Logger = hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Error, Output: os.Stderr})
	pc.StartTimeout = 30 * time.Second
	c := plugin.NewClient(pc)
	t.Cleanup(c.Kill)
	cp, err := c.Client()
	if err != nil {
		t.Fatalf("start child: %v", err)
	}
	hc, err := host.Dispense(cp)
	if err != nil {
		t.Fatalf("dispense: %v", err)
	}
	if err := hc.Configure(context.Background(), cfg); err != nil {
		t.Fatalf("configure: %v", err)
	}
	return &child{t: t, client: hc, stderr: stderr}
}

func (c *child) run(action string, params map[string]string) string {
	c.t.Helper()
	var o sdktest.Outcome
	res, err := c.client.Execute(context.Background(), host.Command{Action: action, Params: params}, func(rows []string) error {
		o.Rows = append(o.Rows, rows...)
		return nil
	})
	if err != nil {
		c.t.Fatalf("%s: %v", action, err)
	}
	o.Result = res
	return o.String()
}

// TestChildBuild builds the plugin with sdktest.Build, as the Makefile builds it, and
// runs it through sdktest.Start.
func TestChildBuild(t *testing.T) {
	bin := sdktest.Build(t, ".")
	dir := t.TempDir()
	h := sdktest.Start(t, bin, sdk.Config{DataDir: dir})
	if m := h.Manifest(); m.Name != "tags" || len(m.Actions) != 7 || m.SDKVersion != sdk.Version {
		t.Errorf("manifest %+v", m)
	}
	runSteps(t, h, []step{
		{"set", kv("key", "role", "value", "web|db"), "tag_set|role|web|db\n" + undeclared},
		{"get_all", nil, "tag|role|web|db\ncount|1\n" + undeclared},
		{"set", kv("key", "bad key"), "error|invalid key: bad key\n" + undeclared + rc1},
		{"nope", nil, "unknown action: nope\n" + undeclared + rc1},
	})
}

// TestPersistAcrossProcesses: what one plugin process sets, the next one loads; two
// running processes see each other's writes.
func TestPersistAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	first := sdktest.Start(t, pluginBin(t), sdk.Config{DataDir: dir})
	runSteps(t, first, []step{{"set", kv("key", "env", "value", "prod"), "tag_set|env|prod\n" + undeclared}})
	first.Client.Kill()

	second := sdktest.Start(t, pluginBin(t), sdk.Config{DataDir: dir})
	third := sdktest.Start(t, pluginBin(t), sdk.Config{DataDir: dir})
	runSteps(t, second, []step{
		{"get", kv("key", "env"), "tag|env|prod\n" + undeclared},
		{"set", kv("key", "role", "value", "web"), "tag_set|role|web\n" + undeclared},
	})
	runSteps(t, third, []step{
		{"get_all", nil, "tag|env|prod\ntag|role|web\ncount|2\n" + undeclared},
		{"delete", kv("key", "env"), "tag_deleted|env|true\n" + undeclared},
	})
	runSteps(t, second, []step{{"get_all", nil, "tag|role|web\ncount|1\n" + undeclared}})
}

// TestTwoProcessesNoLostUpdate: two plugin processes doing 50 sets each (10 under
// -short) at the same time on one data dir lose no update.
func TestTwoProcessesNoLostUpdate(t *testing.T) {
	dir := t.TempDir()
	each := 50
	if testing.Short() {
		// The Windows leg runs -short under Wine (see TestConcurrentHandlers).
		each = 10
		t.Logf("-short: %d sets from each process instead of 50", each)
	}
	procs := []*sdktest.Harness{
		sdktest.Start(t, pluginBin(t), sdk.Config{DataDir: dir}),
		sdktest.Start(t, pluginBin(t), sdk.Config{DataDir: dir}),
	}
	var wg sync.WaitGroup
	errs := make(chan string, 2*each)
	for p, h := range procs {
		wg.Go(func() {
			for i := range each {
				key := fmt.Sprintf("p%d_%02d", p, i)
				o, err := h.Execute(context.Background(), host.Command{Action: "set", Params: kv("key", key, "value", "v")})
				if want := "tag_set|" + key + "|v\n" + undeclared; err != nil || o.String() != want {
					errs <- fmt.Sprintf("%s: %q %v", key, o.String(), err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	b, err := os.ReadFile(filepath.Join(dir, "tags.json"))
	if err != nil {
		t.Fatal(err)
	}
	for p := range 2 {
		for i := range each {
			if key := fmt.Sprintf(`"p%d_%02d": "v"`, p, i); !bytes.Contains(b, []byte(key)) {
				t.Errorf("tags.json lacks %s", key)
			}
		}
	}
	for _, h := range procs {
		runSteps(t, h, []step{{"count", nil, fmt.Sprintf("count|%d\n", 2*each) + undeclared}})
	}
}

// TestPersistFailedLogs: a failed write logs `tags: state not persisted: ...` on the
// plugin's stderr (the agent's log) besides the CONSTRAINED answer.
func TestPersistFailedLogs(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "blocker")
	if err := os.WriteFile(blocker, []byte("x"), 0o666); err != nil {
		t.Fatal(err)
	}
	c := startChild(t, sdk.Config{DataDir: blocker}, nil)
	if got, want := c.run("set", kv("key", "k", "value", "v")), "tag_set|k|v\n"+persistFailed; got != want {
		t.Errorf("set: got %q want %q", got, want)
	}
	// The system's own words for the failed mkdir end the line. The log line is JSON,
	// so a Windows path's backslashes show doubled.
	want := strings.ReplaceAll("tags: state not persisted: mkdir "+blocker+": ", `\`, `\\`)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(c.stderr.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("stderr lacks %q:\n%s", want, c.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
