// Package jitter draws the random delays of the module's retries and
// timers, one way: a duration spread uniformly over a range, so that
// clients that failed or started together do not act together again.
// Every package of the module that waits with jitter (lease's backoff and
// keepalive, storage/memory's and storage/etcd's waits, storage/sqlite's
// busy retry, token's transaction retry) calls Between.
package jitter

import (
	"math/rand/v2"
	"time"
)

// Between returns a random duration in [lo, hi], uniformly. A range with
// hi <= lo gives lo; a negative bound counts as 0.
func Between(lo, hi time.Duration) time.Duration {
	lo, hi = max(lo, 0), max(hi, 0)
	if hi <= lo {
		return lo
	}
	if n := hi - lo + 1; n > 0 {
		return lo + rand.N(n)
	}
	return lo + rand.N(hi-lo) // [0, MaxInt64]: hi itself is never drawn
}
