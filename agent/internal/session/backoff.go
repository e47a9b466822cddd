package session

import (
	"math/rand/v2"
	"time"
)

// Reconnect backoff: exponential with full jitter, capped. Attempt n waits a uniformly
// random time between 0 and min(cap, base * 2^n): agents cut off together do not come
// back together, and the cap really is the longest wait.
const (
	defaultBackoffBase = time.Second
	defaultBackoffMax  = 300 * time.Second
)

// backoff returns the wait before reconnection attempt n (n >= 1). rnd(k) returns a
// uniform integer in [0, k).
func backoff(n int, base, ceiling time.Duration, rnd func(int64) int64) time.Duration {
	limit := ceiling
	if n < 62 {
		if d := base << n; d > 0 && d < ceiling && d>>n == base {
			limit = d
		}
	}
	return time.Duration(rnd(int64(limit) + 1))
}

// uniform is rand.Int64N, the production source of backoff's and stagger's randomness.
func uniform(k int64) int64 {
	if k <= 0 {
		return 0
	}
	return rand.Int64N(k)
}
