package fleetserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/agent/fleetpb/deliveryv1"
	"github.com/yuzugo/yuzu/agent/trust"
)

// Build is one plugin build the server publishes, for one system.
type Build struct {
	Name, Version string
	OS, Arch      string
	SHA256        string
	Data          []byte
	// Signature is the build's minisign signature text; empty for an unsigned build.
	Signature []byte
	// KeySets are the publisher's key-set updates sent with it, oldest first.
	KeySets []KeySet
	// Corrupt, when set, alters one byte of the chunk at that offset in flight (a
	// test of the agent's checks).
	Corrupt int64
}

// KeySet is one signed key-set document.
type KeySet struct{ Document, Signature []byte }

type buildKey struct{ name, version, goos, goarch string }

// chunkSize is the size of each chunk of a download.
const chunkSize = 64 << 10

// Publish makes a build available to DownloadPlugin and returns it described.
func (s *Server) Publish(b Build) *Build {
	sum := sha256.Sum256(b.Data)
	b.SHA256 = hex.EncodeToString(sum[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	s.published[buildKey{b.Name, b.Version, b.OS, b.Arch}] = &b
	return &b
}

// PublishFile publishes a plugin binary from a file: its name comes from the file
// name (yuzu-plugin-NAME[.exe]), its system from its headers, its signature from
// FILE.minisig when there is one. version is what the build says of itself (the agent
// checks).
func (s *Server) PublishFile(path, version string) (*Build, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	name, ok := trust.PluginName(filepath.Base(path))
	if !ok {
		return nil, fmt.Errorf("%s: a plugin binary's name starts with %s", path, trust.BinaryPrefix)
	}
	goos, goarch, err := trust.Target(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	b := Build{Name: name, Version: version, OS: goos, Arch: goarch, Data: data}
	if sig, err := os.ReadFile(path + ".minisig"); err == nil {
		b.Signature = sig
	}
	return s.Publish(b), nil
}

// InstallCommand is the command that has an agent install a published build
// (docs/fleet.md "Plugins over the fleet link").
func (b *Build) InstallCommand(id string) *agentv1.CommandRequest {
	return &agentv1.CommandRequest{CommandId: id, Plugin: "yuzu.agent", Action: "plugin_install", Parameters: map[string]string{
		"name": b.Name, "version": b.Version, "sha256": b.SHA256, "size": strconv.Itoa(len(b.Data)),
	}}
}

// deployed numbers deploy commands across the process, so ids never repeat.
var deployed atomic.Int64

// Deploy has each of the agents install the build, all at once, and waits for every
// answer: the results by agent id.
func (s *Server) Deploy(ctx context.Context, b *Build, agents []string) (map[string]Result, error) {
	ids := map[string]string{}
	for _, a := range agents {
		id := fmt.Sprintf("deploy-%d-%s-%s", deployed.Add(1), b.Name, b.Version)
		ids[a] = id
		if err := s.SendTo(ctx, a, b.InstallCommand(id)); err != nil {
			return nil, err
		}
	}
	out := map[string]Result{}
	for a, id := range ids {
		r, err := s.WaitTerminal(ctx, id)
		if err != nil {
			return out, fmt.Errorf("agent %s: %w", a, err)
		}
		out[a] = r
	}
	return out, nil
}

// delivery implements yuzu.delivery.v1.PluginDeliveryService.
type delivery struct {
	deliveryv1.UnimplementedPluginDeliveryServiceServer
	s *Server
}

func (d *delivery) DownloadPlugin(req *deliveryv1.DownloadPluginRequest, stream deliveryv1.PluginDeliveryService_DownloadPluginServer) error {
	s := d.s
	md, _ := metadata.FromIncomingContext(stream.Context())
	ids := md.Get(SessionHeader)
	s.mu.Lock()
	known := len(ids) == 1 && s.sessions[ids[0]]
	b := s.published[buildKey{req.GetName(), req.GetVersion(), req.GetOs(), req.GetArch()}]
	s.mu.Unlock()
	switch {
	case !known:
		return status.Error(codes.Unauthenticated, "DownloadPlugin without a registered session")
	case b == nil:
		return status.Errorf(codes.NotFound, "no build of %s %s for %s/%s is published", req.GetName(), req.GetVersion(), req.GetOs(), req.GetArch())
	case !strings.EqualFold(b.SHA256, req.GetSha256()):
		return status.Errorf(codes.NotFound, "the published %s %s has SHA-256 %s", b.Name, b.Version, b.SHA256)
	}
	for off := 0; off < len(b.Data) || off == 0; off += chunkSize {
		end := min(off+chunkSize, len(b.Data))
		chunk := &deliveryv1.DownloadPluginResponse{Data: b.Data[off:end], Offset: int64(off), TotalSize: int64(len(b.Data))}
		if b.Corrupt > 0 && b.Corrupt >= int64(off) && b.Corrupt < int64(end) {
			chunk.Data = append([]byte(nil), chunk.Data...)
			chunk.Data[b.Corrupt-int64(off)] ^= 0xff
		}
		if off == 0 {
			chunk.Signature = b.Signature
			for _, k := range b.KeySets {
				chunk.KeySets = append(chunk.KeySets, &deliveryv1.KeySetUpdate{Document: k.Document, Signature: k.Signature})
			}
		}
		if err := stream.Send(chunk); err != nil {
			return err
		}
		if end == len(b.Data) {
			break
		}
	}
	return nil
}
