// Package sdktest runs a plugin in tests: in process over an in-memory gRPC connection
// (fast, for table tests of actions) or as a real child process started the way the
// agent starts it (for everything that depends on being a separate process).
package sdktest

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
	"github.com/yuzugo/yuzu/sdk/internal/pluginv1"
	"github.com/yuzugo/yuzu/sdk/internal/wire"
)

// Outcome is what one command produced.
type Outcome struct {
	Rows   []string
	Result sdk.Result
	// Progress holds the progress reports the action sent (sdk.Output.Progress), in
	// order. Reports closer together than the SDK's interval are dropped, so expect
	// the first and the one that reaches the total, not every call.
	Progress []Progress
}

// Progress is one progress report.
type Progress struct {
	Done, Total uint64
	Unit        string
}

// String renders the outcome in the agent's capture format: the rows, then the
// result trailer.
func (o Outcome) String() string {
	var b strings.Builder
	for _, r := range o.Rows {
		b.WriteString(r)
		b.WriteByte('\n')
	}
	b.WriteString(host.Trailer(o.Result))
	return b.String()
}

// Harness drives one plugin, in process or as a child.
type Harness struct {
	t      testing.TB
	client *host.Client
	// Client is the go-plugin client when the plugin runs as a child, else nil.
	Client *plugin.Client
	// protocol is the negotiated protocol version, 0 in process.
	protocol int
	// actions are the plugin's declared actions by name, learnt when the harness
	// configures the plugin, for checking the rows each writes.
	actions map[string]*sdk.Action
	// rowsUnchecked turns the row check off (AllowUndeclaredRows).
	rowsUnchecked bool
}

// AllowUndeclaredRows stops the harness from failing the test on rows that depart from
// their action's declaration: for a test that makes a plugin write such rows on purpose.
func (h *Harness) AllowUndeclaredRows() { h.rowsUnchecked = true }

// checkRows fails the test for every row that departs from its action's declared rows
// (sdk.Action.CheckRow): a kind the action does not declare, missing fields, a typed
// field that does not parse. The agent counts such rows in production; a plugin's own
// tests should never see one.
func (h *Harness) checkRows(action string, written []string) {
	h.t.Helper()
	if h.rowsUnchecked || len(written) == 0 {
		return
	}
	a, ok := h.actions[action]
	if !ok {
		return // the SDK's own "unknown action" answer
	}
	for _, r := range written {
		if bad := a.CheckRow(r); bad != nil {
			h.t.Errorf("sdktest: %s wrote a row its declaration does not allow: %s\n  row: %s", action, bad.Reason, r)
		}
	}
}

// New serves p in process and configures it with cfg. The server stops when the test
// ends.
func New(t testing.TB, p *sdk.Plugin, cfg sdk.Config) *Harness {
	t.Helper()
	if err := p.Validate(); err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(wire.MaxMessageBytes), grpc.MaxSendMsgSize(wire.MaxMessageBytes))
	impl, err := wire.NewServer(p)
	if err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	pluginv1.RegisterPluginServiceServer(srv, impl)
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufconn",
		append(host.DialOptions(),
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
			grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatalf("sdktest: dial: %v", err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
	})
	h := &Harness{t: t, client: host.NewClient(conn)}
	h.configure(cfg)
	return h
}

// Start runs the plugin binary at path as a real child, the way the agent does
// (go-plugin handshake, automatic mutual TLS), and configures it with cfg. The child
// is killed when the test ends.
func Start(t testing.TB, path string, cfg sdk.Config) *Harness {
	t.Helper()
	cmd := exec.Command(path)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	pc := host.ClientConfig(cmd)
	pc.Logger = hclog.New(&hclog.LoggerOptions{Name: "sdktest", Level: hclog.Warn, Output: os.Stderr})
	pc.StartTimeout = 30 * time.Second
	c := plugin.NewClient(pc)
	t.Cleanup(c.Kill)
	cp, err := c.Client()
	if err != nil {
		t.Fatalf("sdktest: start %s: %v", path, err)
	}
	hc, err := host.Dispense(cp)
	if err != nil {
		t.Fatalf("sdktest: dispense %s: %v", path, err)
	}
	h := &Harness{t: t, client: hc, Client: c, protocol: c.NegotiatedVersion()}
	h.configure(cfg)
	return h
}

// Attach connects to a plugin started by hand in debug mode (sdk.WithDebug), for
// example under a debugger, and configures it with cfg. reattach is the
// `YUZU_PLUGIN_REATTACH=...` line the plugin printed on stderr. The plugin keeps running
// when the test ends; stop it yourself.
func Attach(t testing.TB, reattach string, cfg sdk.Config) *Harness {
	t.Helper()
	rc, err := wire.DecodeReattach(reattach)
	if err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	pc := host.ClientConfig(nil)
	pc.Reattach = rc
	// go-plugin negotiates nothing on a reattach: the set is the line's version's.
	pc.Plugins = host.PluginSets()[rc.ProtocolVersion]
	pc.AutoMTLS = false // the plugin in debug mode serves without TLS
	pc.Logger = hclog.New(&hclog.LoggerOptions{Name: "sdktest", Level: hclog.Warn, Output: os.Stderr})
	c := plugin.NewClient(pc)
	t.Cleanup(c.Kill) // with Test set, Kill closes the connection and leaves the process
	cp, err := c.Client()
	if err != nil {
		t.Fatalf("sdktest: attach: %v", err)
	}
	hc, err := host.Dispense(cp)
	if err != nil {
		t.Fatalf("sdktest: dispense: %v", err)
	}
	h := &Harness{t: t, client: hc, Client: c, protocol: c.NegotiatedVersion()}
	h.configure(cfg)
	return h
}

func (h *Harness) configure(cfg sdk.Config) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.client.Configure(ctx, cfg); err != nil {
		h.t.Fatalf("sdktest: configure: %v", err)
	}
	// Learnt now, while the plugin surely answers: a test may kill it later.
	m, err := h.client.Describe(ctx)
	if err != nil {
		h.t.Fatalf("sdktest: describe: %v", err)
	}
	h.actions = map[string]*sdk.Action{}
	for i := range m.Actions {
		h.actions[m.Actions[i].Name] = &m.Actions[i]
	}
}

// Manifest returns the plugin's manifest.
func (h *Harness) Manifest() host.Manifest {
	h.t.Helper()
	m, err := h.client.Describe(context.Background())
	if err != nil {
		h.t.Fatalf("sdktest: describe: %v", err)
	}
	m.Protocol = h.protocol
	return m
}

// Run executes action with params and fails the test on a protocol error.
func (h *Harness) Run(action string, params map[string]string) Outcome {
	h.t.Helper()
	o, err := h.RunContext(context.Background(), action, params)
	if err != nil {
		h.t.Fatalf("sdktest: %s: %v", action, err)
	}
	return o
}

// RunContext executes action with params the way the agent does: ctx's deadline, if
// any, is the command's deadline (the handler's ctx carries it), and cancelling ctx
// cancels the command. It returns once the handler has stopped; the error is ctx's
// when the command was cancelled or timed out, with the rows written until then.
func (h *Harness) RunContext(ctx context.Context, action string, params map[string]string) (Outcome, error) {
	cmd := host.Command{Action: action, Params: params}
	if d, ok := ctx.Deadline(); ok {
		cmd.Deadline = d
	}
	return h.Execute(ctx, cmd)
}

// Execute runs a command and returns its outcome or the protocol error.
func (h *Harness) Execute(ctx context.Context, cmd host.Command) (Outcome, error) {
	var o Outcome
	if cmd.OnProgress == nil {
		cmd.OnProgress = func(done, total uint64, unit string) {
			o.Progress = append(o.Progress, Progress{Done: done, Total: total, Unit: unit})
		}
	}
	res, err := h.client.Execute(ctx, cmd, func(rows []string) error {
		o.Rows = append(o.Rows, rows...)
		return nil
	})
	o.Result = res
	h.checkRows(cmd.Action, o.Rows)
	return o, err
}
