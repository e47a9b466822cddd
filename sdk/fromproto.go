package sdk

import (
	"time"

	"github.com/yuzugo/yuzu/sdk/internal/pluginv1"
	"github.com/yuzugo/yuzu/sdk/params"
)

// The plugin side's conversions from the wire's types to the SDK's (toproto.go has
// the other direction).

func configFromProto(req *pluginv1.ConfigureRequest) Config {
	return Config{
		AgentID:      req.GetAgentId(),
		AgentVersion: req.GetAgentVersion(),
		DataDir:      req.GetDataDir(),
		LogLevel:     req.GetLogLevel(),
	}
}

// requestFromProto reads a command; the server adds its configuration and logger.
func requestFromProto(req *pluginv1.ExecuteRequest) *Request {
	return &Request{
		CommandID: req.GetCommandId(),
		Action:    req.GetAction(),
		Params:    params.New(req.GetParameters()),
		Deadline:  deadlineFromProto(req),
	}
}

// deadlineFromProto is the command's deadline, zero when the host set none (an unset
// or zero timestamp).
func deadlineFromProto(req *pluginv1.ExecuteRequest) time.Time {
	if d := req.GetDeadline(); d != nil && (d.Seconds != 0 || d.Nanos != 0) {
		return d.AsTime()
	}
	return time.Time{}
}
