// Package host is the agent's side of the plugin protocol: the go-plugin handshake and
// plugin set to start a plugin child with, and a Client that speaks to it in the SDK's
// plain Go types. The agent's supervisor and sdktest use it; plugin authors do not
// need it.
package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/definition"
	"github.com/yuzugo/yuzu/sdk/internal/pluginv1"
	"github.com/yuzugo/yuzu/sdk/internal/wire"
)

// Handshake is the go-plugin handshake every yuzu plugin answers.
var Handshake = wire.Handshake

// MaxMessageBytes bounds one gRPC message either way (see DialOptions).
const MaxMessageBytes = wire.MaxMessageBytes

// PluginSets returns the versioned plugin sets for plugin.ClientConfig.
func PluginSets() map[int]plugin.PluginSet { return wire.Sets(nil) }

// DialOptions are the gRPC options a host should dial a plugin with.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithDefaultCallOptions(
		grpc.MaxCallRecvMsgSize(MaxMessageBytes),
		grpc.MaxCallSendMsgSize(MaxMessageBytes),
	)}
}

// ClientConfig returns the go-plugin client configuration every host starts a yuzu
// plugin child with: the handshake, gRPC only, mutual TLS (MutualTLS, added to cmd's
// environment; go-plugin's AutoMTLS when there is no cmd, for a caller that calls
// MutualTLS itself or attaches to a debug plugin), no inherited environment (cmd.Env
// is all the child gets, plus go-plugin's own variables) and the message size limits.
// The caller adds what is its own: Logger, StartTimeout, SecureConfig, Stderr.
func ClientConfig(cmd *exec.Cmd) *plugin.ClientConfig {
	cc := &plugin.ClientConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: PluginSets(),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		GRPCDialOptions:  DialOptions(),
	}
	if cmd != nil {
		// Should the key not be made, go-plugin's AutoMTLS still protects the child.
		if env, err := MutualTLS(cc); err == nil {
			cmd.Env = append(cmd.Env, env...)
		}
	}
	return cc
}

// Manifest is what a plugin says about itself.
type Manifest struct {
	Name        string
	Version     string
	Description string
	SDKVersion  string
	// Vendor is the plugin's prefix for derived definitions (sdk.Plugin.Vendor).
	Vendor string
	// Protocol is the plugin protocol version the host and the plugin agreed on at
	// the go-plugin handshake (1 is yuzu.plugin.v1); the host fills it in, 0 when no
	// handshake took place (ManifestOf, an in-process harness).
	Protocol int
	Actions  []sdk.Action
	// Definitions are the InstructionDefinition files the plugin ships.
	Definitions []sdk.DefinitionFile
}

// Action returns the named action and whether the plugin has it.
func (m Manifest) Action(name string) (sdk.Action, bool) {
	for _, a := range m.Actions {
		if a.Name == name {
			return a, true
		}
	}
	return sdk.Action{}, false
}

// ServedDefinitions returns the definitions the plugin serves: the ones it ships and,
// when it declares a vendor prefix, the ones derived from its declarations
// (definition.Served). A plugin that ships none and derives none serves none; that is
// no error.
func (m Manifest) ServedDefinitions() ([]definition.Definition, error) {
	if m.Vendor == "" && len(m.Definitions) == 0 {
		return nil, nil
	}
	return definition.Served(m.Name, m.Vendor, m.Version, m.Actions, m.Definitions)
}

// ManifestOf returns the manifest p would send, without starting it: what the agent
// would learn from Describe. Tests use it to check a plugin's declarations.
func ManifestOf(p *sdk.Plugin) Manifest {
	return Manifest{
		Name:        p.Name,
		Version:     p.Version,
		Description: p.Description,
		SDKVersion:  sdk.Version,
		Vendor:      p.Vendor,
		Actions:     p.Actions(),
		Definitions: p.DefinitionFiles(),
	}
}

// Command is one command to run.
type Command struct {
	ID       string
	Action   string
	Params   map[string]string
	Deadline time.Time
	// OnProgress, when set, receives the action's progress reports (sdk.Output's
	// Progress) while it runs; total is 0 when unknown. The plugin sends none
	// otherwise. It is called from Execute's goroutine, between row batches.
	OnProgress func(done, total uint64, unit string)
}

// ErrNoResult means the plugin's stream ended without a result: the plugin died or
// broke the protocol mid-command.
var ErrNoResult = errors.New("plugin ended the command without a result")

// Client talks to one plugin child.
type Client struct {
	rpc pluginv1.PluginServiceClient
	seq atomic.Uint64 // invocation ids
}

// Dispense returns a Client for a started go-plugin client protocol.
func Dispense(cp plugin.ClientProtocol) (*Client, error) {
	raw, err := cp.Dispense(wire.PluginKey)
	if err != nil {
		return nil, err
	}
	rpc, ok := raw.(pluginv1.PluginServiceClient)
	if !ok {
		return nil, fmt.Errorf("plugin dispensed %T, not a yuzu plugin client", raw)
	}
	return &Client{rpc: rpc}, nil
}

// NewClient returns a Client over an existing connection (used in process by sdktest).
func NewClient(conn grpc.ClientConnInterface) *Client {
	return &Client{rpc: pluginv1.NewPluginServiceClient(conn)}
}

// Describe asks the plugin for its manifest.
func (c *Client) Describe(ctx context.Context) (Manifest, error) {
	resp, err := c.rpc.Describe(ctx, &pluginv1.DescribeRequest{})
	if err != nil {
		return Manifest{}, err
	}
	return manifestFromProto(resp.GetManifest()), nil
}

// Configure hands the plugin its configuration.
func (c *Client) Configure(ctx context.Context, cfg sdk.Config) error {
	_, err := c.rpc.Configure(ctx, configToProto(cfg))
	return err
}

// cancelTimeout bounds the Cancel call itself.
const cancelTimeout = 2 * time.Second

// Execute runs a command, calling onRows for each batch of rows in order, and returns
// the plugin's result.
//
// Cancelling ctx asks the plugin to cancel the handler (the Cancel RPC) but keeps the
// stream open: Execute returns only when the handler has stopped (its result arrives,
// returned together with ctx.Err()) or the stream breaks, for example because the
// supervisor killed a handler that ignored the cancellation. A plugin that predates
// Cancel has its stream cancelled instead. An error from onRows cancels the command
// and is returned at once.
func (c *Client) Execute(ctx context.Context, cmd Command, onRows func(rows []string) error) (sdk.Result, error) {
	streamCtx, cancelStream := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelStream()
	inv := strconv.FormatUint(c.seq.Add(1), 10)
	stream, err := c.rpc.Execute(streamCtx, commandToProto(cmd, inv))
	if err != nil {
		return sdk.Result{}, err
	}
	stopCancel := context.AfterFunc(ctx, func() {
		cctx, done := context.WithTimeout(context.Background(), cancelTimeout)
		defer done()
		if _, err := c.rpc.Cancel(cctx, cancelToProto(inv)); err != nil {
			cancelStream()
		}
	})
	defer stopCancel()
	for {
		ev, err := stream.Recv()
		if err == io.EOF {
			return sdk.Result{}, ErrNoResult
		}
		if err != nil {
			if ctx.Err() != nil {
				return sdk.Result{}, ctx.Err()
			}
			return sdk.Result{}, err
		}
		switch e := ev.GetEvent().(type) {
		case *pluginv1.ExecuteResponse_Rows:
			if err := onRows(e.Rows.GetRows()); err != nil {
				return sdk.Result{}, err
			}
		case *pluginv1.ExecuteResponse_Progress:
			if cmd.OnProgress != nil {
				cmd.OnProgress(progressFromProto(e.Progress))
			}
		case *pluginv1.ExecuteResponse_Result:
			return resultFromProto(e.Result), ctx.Err()
		default:
			return sdk.Result{}, fmt.Errorf("plugin sent an unknown event %T", e)
		}
	}
}

// Trailer returns the lines that end a command in the capture format, after its rows:
// `[result_status] STATUS / COMPLETENESS` (plus ` / provenance` when set), then
// `[rc] N` when the return code is not 0. Each line ends with a newline.
func Trailer(res sdk.Result) string {
	s := "[result_status] " + res.Status.String() + " / " + res.Completeness.String()
	if res.Provenance != "" {
		s += " / " + res.Provenance
	}
	s += "\n"
	if res.Code != 0 {
		s += fmt.Sprintf("[rc] %d\n", res.Code)
	}
	return s
}
