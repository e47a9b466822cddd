// Package wire holds what the plugin side and the host side of the protocol must agree
// on: the go-plugin handshake, the plugin set and the message size limit.
package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/yuzugo/yuzu/sdk/internal/pluginv1"
)

// Handshake is fixed forever: an agent and a plugin built years apart must still
// recognise each other. ProtocolVersion 1 is yuzu.plugin.v1; a v2 is added beside it in
// the versioned plugin sets, never in place of it.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "YUZU_PLUGIN_MAGIC_COOKIE",
	MagicCookieValue: "b3f1c6a2-yuzu-plugin-7d94e0a5c81f",
}

// PluginKey is the name the single service is dispensed under.
const PluginKey = "plugin"

// MaxMessageBytes bounds one gRPC message either way. A row batch is at most
// 1 MiB of rows plus one row of up to 4 MiB (sdk.MaxRowBytes), and a command's
// parameters may carry a file's content; 16 MiB leaves room for both and their
// framing while still refusing a runaway message.
const MaxMessageBytes = 16 << 20

// GRPCPlugin adapts the service to go-plugin. Impl is set on the plugin side only.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl pluginv1.PluginServiceServer
}

// GRPCServer registers the service on the plugin side.
func (p *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return errors.New("wire: no server implementation")
	}
	pluginv1.RegisterPluginServiceServer(s, p.Impl)
	return nil
}

// GRPCClient returns the generated client on the host side.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pluginv1.NewPluginServiceClient(c), nil
}

// Sets returns the versioned plugin sets for go-plugin. srv is nil on the host side.
func Sets(srv pluginv1.PluginServiceServer) map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{
		1: {PluginKey: &GRPCPlugin{Impl: srv}},
	}
}

// serverFactory builds a plugin's service: a func(*sdk.Plugin)
// pluginv1.PluginServiceServer that package sdk registers at init, so that sdktest can
// serve a plugin in process without sdk exporting its internals. Package wire cannot
// name *sdk.Plugin (sdk imports wire), so the two typed functions below carry the type
// from each call site: sdk registers a func of its own type and sdktest asks with that
// same type, both checked by the compiler there.
var serverFactory any

// RegisterServer sets the factory NewServer uses for plugins of type P.
func RegisterServer[P any](f func(P) pluginv1.PluginServiceServer) { serverFactory = f }

// NewServer builds the service of p with the factory registered for P. It fails, not
// panics, when none is: a programming error in the SDK, reported as such.
func NewServer[P any](p P) (pluginv1.PluginServiceServer, error) {
	f, ok := serverFactory.(func(P) pluginv1.PluginServiceServer)
	if !ok {
		return nil, fmt.Errorf("wire: no server factory registered for %T", p)
	}
	return f(p), nil
}

// ReattachEnv names the line a plugin in debug mode prints (sdk.WithDebug): a host
// attaches to it with the value instead of starting a child.
const ReattachEnv = "YUZU_PLUGIN_REATTACH"

// reattach is ReattachConfig in JSON: net.Addr has no JSON form of its own.
type reattach struct {
	Protocol        string `json:"protocol"`
	ProtocolVersion int    `json:"protocol_version"`
	Network         string `json:"network"`
	Address         string `json:"address"`
	Pid             int    `json:"pid"`
}

// EncodeReattach writes rc as one line of JSON.
func EncodeReattach(rc *plugin.ReattachConfig) (string, error) {
	b, err := json.Marshal(reattach{
		Protocol: string(rc.Protocol), ProtocolVersion: rc.ProtocolVersion,
		Network: rc.Addr.Network(), Address: rc.Addr.String(), Pid: rc.Pid,
	})
	return string(b), err
}

// DecodeReattach reads what EncodeReattach wrote (with or without the leading
// `YUZU_PLUGIN_REATTACH=`) into a configuration for plugin.ClientConfig.Reattach.
func DecodeReattach(line string) (*plugin.ReattachConfig, error) {
	line = strings.TrimPrefix(strings.TrimSpace(line), ReattachEnv+"=")
	var r reattach
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return nil, fmt.Errorf("reattach line: %w", err)
	}
	if r.Protocol != string(plugin.ProtocolGRPC) || r.ProtocolVersion != int(Handshake.ProtocolVersion) {
		return nil, fmt.Errorf("reattach line: protocol %s version %d, want grpc version %d", r.Protocol, r.ProtocolVersion, Handshake.ProtocolVersion)
	}
	var addr net.Addr
	switch r.Network {
	case "unix":
		addr = &net.UnixAddr{Name: r.Address, Net: "unix"}
	case "tcp":
		a, err := net.ResolveTCPAddr("tcp", r.Address)
		if err != nil {
			return nil, fmt.Errorf("reattach line: %w", err)
		}
		addr = a
	default:
		return nil, fmt.Errorf("reattach line: unknown network %q", r.Network)
	}
	return &plugin.ReattachConfig{Protocol: plugin.ProtocolGRPC, ProtocolVersion: r.ProtocolVersion, Addr: addr, Pid: r.Pid, Test: true}, nil
}
