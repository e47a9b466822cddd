//go:build !linux

package supervisor

import (
	"sync"

	"github.com/hashicorp/go-hclog"
)

// sweepOrphans is Linux-only: elsewhere the agent cannot adopt orphans (macOS) or does
// not need to (Windows job objects end whole trees).
func sweepOrphans(_, _ map[int]bool, _ *sync.Mutex, _ hclog.Logger) {}
