package lease

import "time"

// Clock is a store's clock: the only clock that decides expiry.
//
// Now is a monotonic reading that every process sharing the store agrees on
// (on Linux, CLOCK_BOOTTIME: it counts suspend and never jumps). Epoch names
// the era of those readings (on Linux, the boot id): readings from different
// epochs cannot be compared, so a store that finds a new epoch treats every
// unreleased lease as held for its full TTL from then. Wall only renders
// deadlines for people and never decides anything.
//
// Tests substitute a Clock to drive expiry without sleeping (see
// leasetest.Clock).
type Clock interface {
	Now() time.Duration
	Epoch() string
	Wall() time.Time
}
