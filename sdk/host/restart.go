package host

import "time"

// RestartPolicy is how the agent restarts a plugin child that died or failed to start
// (docs/agent.md, "Restarts"). It lives here so that the agent and sdktest's
// KillMidCommand apply the one definition.
type RestartPolicy struct {
	BackoffMin time.Duration // the first restart's delay, doubled per further failure
	BackoffMax time.Duration // the longest delay
	Budget     int           // failures allowed within Window before the plugin is failed
	Window     time.Duration // how far back failures count
	FailedFor  time.Duration // how long a failed plugin refuses commands
}

// DefaultRestartPolicy is the agent's: 100 ms doubling to at most 30 s, failed for
// 5 minutes after more than 5 failures within 60 s.
func DefaultRestartPolicy() RestartPolicy {
	return RestartPolicy{BackoffMin: 100 * time.Millisecond, BackoffMax: 30 * time.Second,
		Budget: 5, Window: 60 * time.Second, FailedFor: 5 * time.Minute}
}

// Backoff returns the delay before the restart after the n-th failure within the
// window (n >= 1), and false when n is past the budget: then the plugin is failed for
// FailedFor instead of restarted.
func (p RestartPolicy) Backoff(n int) (time.Duration, bool) {
	if n > p.Budget {
		return 0, false
	}
	delay := p.BackoffMax
	if n >= 1 && n < 63 {
		if d := p.BackoffMin << (n - 1); d > 0 && d < p.BackoffMax && d>>(n-1) == p.BackoffMin {
			delay = d
		}
	}
	return delay, true
}
