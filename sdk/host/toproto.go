package host

import (
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/internal/pluginv1"
)

// The host's conversions from the SDK's and the host's types to the wire's
// (fromproto.go has the other direction).

func commandToProto(cmd Command, invocation string) *pluginv1.ExecuteRequest {
	req := &pluginv1.ExecuteRequest{CommandId: cmd.ID, Action: cmd.Action, Parameters: cmd.Params,
		InvocationId: invocation, AcceptsProgress: cmd.OnProgress != nil}
	if !cmd.Deadline.IsZero() {
		req.Deadline = timestamppb.New(cmd.Deadline)
	}
	return req
}

func configToProto(cfg sdk.Config) *pluginv1.ConfigureRequest {
	return &pluginv1.ConfigureRequest{
		AgentId:      cfg.AgentID,
		AgentVersion: cfg.AgentVersion,
		DataDir:      cfg.DataDir,
		LogLevel:     cfg.LogLevel,
	}
}

func cancelToProto(invocation string) *pluginv1.CancelRequest {
	return &pluginv1.CancelRequest{InvocationId: invocation}
}
