// Package trace carries a command's logger down to the firewall readers through the
// context, so that the Linux walk can say at debug level which backend it tried and
// why it passed over each (`--log-level debug` on the agent; docs/firewall.md)
// without every reader's signature taking a logger.
package trace

import (
	"context"

	"github.com/hashicorp/go-hclog"
)

type key struct{}

// With returns ctx carrying log.
func With(ctx context.Context, log hclog.Logger) context.Context {
	if log == nil {
		return ctx
	}
	return context.WithValue(ctx, key{}, log)
}

// From returns the logger ctx carries, else one that discards everything.
func From(ctx context.Context) hclog.Logger {
	if l, ok := ctx.Value(key{}).(hclog.Logger); ok {
		return l
	}
	return hclog.NewNullLogger()
}
