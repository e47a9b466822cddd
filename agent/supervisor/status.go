package supervisor

import (
	"maps"
	"slices"
	"time"

	"github.com/yuzugo/yuzu/agent/internal/limits"
)

// Status describes one plugin for `yuzu-agent plugins`, `status` and the metrics.
type Status struct {
	Name      string
	Path      string
	State     State
	Version   string // what the running (or last) child said; empty until it has run once
	Protocol  int    // the negotiated plugin protocol version; 0 until it has run once
	Restarts  int
	LastError string
	Actions   []string
	Pid       int // 0 when not running
	// Build is the catalog's build commands go to ("2.0.0 (sha256 72e79a1b2c3d)"), and
	// Trust who vouches for it ("unsigned", "signed by acme (key ...)").
	Build, Trust string
	// Upgrades counts the catalog's build changes this agent took, Rollbacks the
	// builds it rolled back, and LastRollback says the last one's reason.
	Upgrades, Rollbacks int
	LastRollback        string
	// Probation says the build may still be rolled back (docs/agent.md "Upgrades and
	// rollback"); Upgrading that a new build is starting beside the running child.
	Probation, Upgrading bool
	// RowMismatches counts, by declared kind (or sdk.UndeclaredKind), the rows the
	// plugin wrote that depart from its declarations; they are relayed all the same.
	RowMismatches map[string]int64
	// IdleStop is how long the plugin's child may have no command before it is
	// stopped (0: never); IdleStops counts those stops, which are no failures.
	IdleStop  time.Duration
	IdleStops int
	// StartTook is how long the last successful start took, from the binary's
	// check to Configure: the latency a command meets when its plugin is idle (never
	// 0 once a start succeeded, even on a clock too coarse to see it, as under Wine).
	StartTook time.Duration
	// Boxed says the plugin's child runs in a box with resource limits: Limits
	// are its limits and Usage what the current (or last) child uses and used.
	Boxed  bool
	Limits limits.Limits
	Usage  limits.Usage
}

// snapshot publishes the state for Status; run calls it after every event.
func (k *keeper) snapshot() {
	st := Status{
		Name:      k.name,
		Path:      k.bin.Path,
		State:     k.state,
		Restarts:  k.total,
		LastError: k.lastErr,
		Build:     k.bin.Build,
		Trust:     k.bin.Trust,
		Upgrades:  k.up.upgrades,
		Rollbacks: k.up.rollbacks,
		Probation: k.onProbation(),
		Upgrading: k.up.candLaunching,
	}
	st.LastRollback = k.up.lastRollback
	// The last known version and actions, rebuilt only when a new child brings its
	// manifest: run calls this for every command, and the list does not change.
	// status() clones Actions, so snapshots may share it.
	st.Version, st.Actions, st.Protocol = k.snap.Version, k.snap.Actions, k.snap.Protocol
	box := k.lastBox // the last child's counters stay shown until a new child
	if k.child != nil {
		st.Pid = k.child.Pid()
		if b := k.child.box(); b != nil {
			box = b
		}
		if k.child != k.snapChild {
			m := k.child.Manifest()
			st.Version, st.Actions, st.Protocol = m.Version, make([]string, 0, len(m.Actions)), m.Protocol
			for _, a := range m.Actions {
				st.Actions = append(st.Actions, a.Name)
			}
			k.snapChild = k.child
			k.mu.Lock()
			k.snapManifest = m
			k.mu.Unlock()
		}
	}
	st.IdleStop, st.IdleStops, st.StartTook = k.idle.after, k.idle.stops, k.idle.took
	k.mu.Lock()
	k.snap = st
	k.lastBox = box
	k.mu.Unlock()
}

func (k *keeper) status() Status {
	k.mu.Lock()
	st := k.snap
	b := k.lastBox
	k.mu.Unlock()
	st.Actions = slices.Clone(st.Actions)
	st.RowMismatches = k.rows.counts()
	// The box's counters are read now: they change without events.
	if b != nil {
		st.Boxed, st.Limits, st.Usage = true, b.Limits(), b.Usage()
	}
	return st
}

// clone copies a count map (nil for none).
func cloneCounts(m map[string]int64) map[string]int64 {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
