package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/agent/fleetpb/deliveryv1"
	"github.com/yuzugo/yuzu/agent/internal/installer"
	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/definition"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// AgentPlugin names the agent's own actions on the fleet link (docs/fleet.md "Plugins
// over the fleet link"). It holds a dot, which no plugin's name may, so it can never
// shadow a plugin; an upstream agent answers it "plugin not found".
const AgentPlugin = "yuzu.agent"

// RequiresParam is the parameter a fleet server adds to a command that runs through a
// definition with versioned requiredPlugins (`procs >= 2.0.0`, comma-separated). The
// agent checks it before the command runs and never passes it to the plugin, so a
// plugin may not declare a parameter of that name. An upstream server never sends it.
const RequiresParam = "__requires__"

// MaxPluginDownload bounds a plugin build the fleet may hand the agent, which holds it
// in memory while it checks it: a Go plugin is tens of megabytes.
const MaxPluginDownload = 256 << 20

// InstallFunc installs a build the fleet delivered through the path of `plugins add`
// (signature, floor, trial start, catalog) with the publisher's key-set updates that
// came with it, and returns rows saying what the running agent made of it.
type InstallFunc func(ctx context.Context, o installer.Offer, keySets []KeySetUpdate) ([]string, error)

// KeySetUpdate is one signed key-set document a fleet server sent with a build.
type KeySetUpdate struct{ Document, Signature []byte }

// executor routes a command to the agent's own actions or to the plugins.
type executor struct{ s *Session }

func (e executor) Execute(ctx context.Context, req supervisor.Request, onRows func([]string) error) (sdk.Result, error) {
	if req.Plugin == AgentPlugin {
		return e.s.agentAction(ctx, req, onRows)
	}
	return e.s.o.Plugins.Execute(ctx, req, onRows)
}

// agentAction runs one of the agent's own actions.
func (s *Session) agentAction(ctx context.Context, req supervisor.Request, onRows func([]string) error) (sdk.Result, error) {
	fail := func(msg string) (sdk.Result, error) {
		_ = onRows([]string{rows.Format("error", msg)})
		return sdk.Result{Code: 1}, nil
	}
	switch req.Action {
	case "plugin_install":
		if s.o.InstallPlugin == nil {
			return fail("this agent does not take plugins from the fleet server")
		}
		out, err := s.installPlugin(ctx, req.Params)
		if err != nil {
			return fail(err.Error())
		}
		if err := onRows(out); err != nil {
			return sdk.Result{}, err
		}
		for _, r := range out {
			if strings.HasPrefix(r, "error|") {
				return sdk.Result{Code: 1}, nil
			}
		}
		return sdk.Complete(), nil
	}
	// The SDK's answer for an unknown action, as a plugin gives it.
	_ = onRows([]string{"unknown action: " + req.Action})
	return sdk.Result{Code: 1}, nil
}

// installPlugin fetches the build a plugin_install command names over the fleet
// connection and installs it: `name`, `version`, `sha256` (hex) and `size` (bytes)
// are required. The bytes are hashed and counted as they arrive; a chunk out of order,
// a size other than the command's, or bytes whose checksum differs end it before
// anything is stored.
func (s *Session) installPlugin(ctx context.Context, params map[string]string) ([]string, error) {
	name, version, sum := params["name"], params["version"], strings.ToLower(params["sha256"])
	size, err := strconv.ParseInt(params["size"], 10, 64)
	switch {
	case name == "" || version == "" || sum == "" || params["size"] == "":
		return nil, errors.New("plugin_install needs name, version, sha256 and size")
	case err != nil || size <= 0 || size > MaxPluginDownload:
		return nil, fmt.Errorf("plugin_install: size %q is not a number of bytes from 1 to %d", rows.Printable(params["size"]), MaxPluginDownload)
	case len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "":
		return nil, errors.New("plugin_install: sha256 is not 64 hex digits")
	}
	conn := s.conn()
	if conn == nil {
		return nil, errors.New("plugin_install: the fleet connection is down")
	}
	data, sig, keySets, err := download(ctx, conn, s.sid(), &deliveryv1.DownloadPluginRequest{
		AgentId: s.o.AgentID, Name: name, Version: version, Sha256: sum, Os: runtime.GOOS, Arch: runtime.GOARCH,
	}, size)
	if err != nil {
		return nil, err
	}
	file := supervisor.BinaryPrefix + name
	if runtime.GOOS == "windows" {
		file += ".exe"
	}
	s.log.Info("plugin delivered by the fleet server; installing it", "plugin", shown(name), "version", shown(version), "bytes", len(data))
	return s.o.InstallPlugin(ctx, installer.Offer{
		Bytes: data, Signature: sig, FileName: file, Source: "fleet",
		Claim: installer.Claim{Name: name, Version: version, SHA256: sum},
	}, keySets)
}

// download receives one build over DownloadPlugin.
func download(ctx context.Context, conn grpc.ClientConnInterface, sid string, req *deliveryv1.DownloadPluginRequest, size int64) (data, sig []byte, keySets []KeySetUpdate, err error) {
	ctx = metadata.AppendToOutgoingContext(ctx, SessionHeader, sid)
	stream, err := deliveryv1.NewPluginDeliveryServiceClient(conn).DownloadPlugin(ctx, req)
	if err == nil {
		data, sig, keySets, err = receive(stream, req.GetSha256(), size)
	}
	if status.Code(err) == codes.Unimplemented {
		return nil, nil, nil, errors.New("plugin_install: the fleet server offers no plugin delivery (DownloadPlugin is unimplemented)")
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("plugin_install: download: %w", err)
	}
	return data, sig, keySets, nil
}

// receive reads the chunks of one build, checking each against the last.
func receive(stream grpc.ServerStreamingClient[deliveryv1.DownloadPluginResponse], sum string, size int64) (data, sig []byte, keySets []KeySetUpdate, err error) {
	h := sha256.New()
	buf := make([]byte, 0, size)
	for first := true; ; first = false {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, nil, err
		}
		switch {
		case chunk.GetTotalSize() != size:
			return nil, nil, nil, fmt.Errorf("the server says the build is %d bytes, the command said %d", chunk.GetTotalSize(), size)
		case chunk.GetOffset() != int64(len(buf)):
			return nil, nil, nil, fmt.Errorf("a chunk at offset %d where %d was due", chunk.GetOffset(), len(buf))
		case int64(len(buf)+len(chunk.GetData())) > size:
			return nil, nil, nil, fmt.Errorf("more than the %d bytes announced", size)
		}
		if first {
			sig = chunk.GetSignature()
			for _, k := range chunk.GetKeySets() {
				keySets = append(keySets, KeySetUpdate{Document: k.GetDocument(), Signature: k.GetSignature()})
			}
		}
		h.Write(chunk.GetData())
		buf = append(buf, chunk.GetData()...)
	}
	if int64(len(buf)) != size {
		return nil, nil, nil, fmt.Errorf("the download ended at %d of %d bytes", len(buf), size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sum {
		return nil, nil, nil, fmt.Errorf("the bytes received have SHA-256 %s, the command said %s", got, sum)
	}
	return buf, sig, keySets, nil
}

// checkRequirements takes the versioned requirements a fleet server added to a
// command out of its parameters (the plugin never sees them) and checks them against
// the plugins this agent runs. The error names the plugin and both versions.
func (s *Session) checkRequirements(req *agentv1.CommandRequest) error {
	spec, ok := req.GetParameters()[RequiresParam]
	if !ok {
		return nil
	}
	params := make(map[string]string, len(req.GetParameters())-1)
	for k, v := range req.GetParameters() {
		if k != RequiresParam {
			params[k] = v
		}
	}
	req.Parameters = params
	var reqs []definition.Requirement
	for _, part := range strings.Split(spec, ",") {
		r, err := definition.ParseRequirement(part)
		if err != nil {
			return fmt.Errorf("invalid command: %s %v", RequiresParam, err)
		}
		reqs = append(reqs, r)
	}
	versions := map[string]string{}
	for _, st := range s.o.Plugins.Status() {
		if st.State != supervisor.StateRefused {
			versions[st.Name] = st.Version
		}
	}
	return definition.CheckPlugins(reqs, "this command", func(p string) (string, bool) {
		v, ok := versions[p]
		if ok && v == "" {
			v = "unknown (never started)"
		}
		return v, ok
	})
}
