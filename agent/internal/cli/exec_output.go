package cli

import (
	"context"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/dispatch"
	"github.com/yuzugo/yuzu/agent/supervisor"
)

// declareRows finds the row kinds t's action declares, for the formats that name
// fields, unless a definition already brought them. Asking starts the plugin, so the
// command's deadline starts now and bounds the question too. A plugin that cannot be
// asked is no error here: the command then fails as it would in the capture format,
// with the same row.
func declareRows(ctx context.Context, sup *supervisor.Supervisor, req *dispatch.Request, t *target, log hclog.Logger) {
	if t.rows != nil {
		return
	}
	dctx := ctx
	if deadline := req.SetDeadline(); !deadline.IsZero() {
		var cancel context.CancelFunc
		dctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	m, err := sup.Describe(dctx, t.plugin)
	if err != nil {
		log.Debug("no row declarations for the output", "plugin", t.plugin, "error", err)
		return
	}
	if a, ok := m.Action(t.action); ok {
		t.rows = a.Rows
	}
}
