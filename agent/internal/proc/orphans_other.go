//go:build !linux

package proc

import (
	"sync"

	"github.com/hashicorp/go-hclog"
)

// SweepOrphans is Linux-only: elsewhere the agent cannot adopt orphans (macOS) or does
// not need to (Windows job objects end whole trees).
func SweepOrphans(_, _ map[int]bool, _ *sync.Mutex, _ hclog.Logger) {}
