//go:build !linux && !darwin && !windows

package main

import (
	"context"

	"github.com/yuzugo/yuzu/plugin-firewall/internal/row"
)

// unsupported answers on systems the plugin does not know how to read: the firewall
// is not known, which is the honest answer.
type unsupported struct{}

func newReader() reader { return unsupported{} }

func (unsupported) State(context.Context) []row.Row {
	return []row.Row{row.New("backend", "none"), row.New("state", "unknown"), row.New("ruleset", "unknown")}
}

func (unsupported) Rules(context.Context) []row.Row {
	return []row.Row{row.New("backend", "none"), row.New("rules", "unknown"), row.New("ruleset", "unknown")}
}
