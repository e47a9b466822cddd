//go:build !linux && !darwin && !windows

package main

import (
	"context"

	"github.com/yuzugo/yuzu/sdk/rows"
)

// unsupported answers on systems the plugin does not know how to read: the firewall
// is not known, which is the honest answer.
type unsupported struct{}

func newReader() reader { return unsupported{} }

func (unsupported) State(context.Context) []rows.Row {
	return []rows.Row{rows.New("backend", "none"), rows.New("state", "unknown"), rows.New("ruleset", "unknown")}
}

func (unsupported) Rules(context.Context) []rows.Row {
	return []rows.Row{rows.New("backend", "none"), rows.New("rules", "unknown"), rows.New("ruleset", "unknown")}
}
