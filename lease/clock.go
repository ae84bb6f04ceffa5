package lease

import "time"

// Clock is a monotonic clock with an epoch. A store's Clock is the only
// clock that decides expiry; a Manager measures its leases' local deadlines
// on one too (WithClock).
//
// Now is a monotonic reading that every process sharing the store agrees on
// (on Linux, CLOCK_BOOTTIME: it counts suspend and never jumps). Epoch names
// the era of those readings (on Linux, the boot id): readings from different
// epochs cannot be compared, so a store that finds a new epoch treats every
// unreleased lease as held for its full TTL from then, and a lease handle
// that finds one gives its lease up. Wall only renders deadlines for people
// and never decides anything.
//
// Tests substitute a Clock to drive expiry without sleeping (see
// leasetest.Clock), and can drive a store's clock and a handle's clock apart
// or together, as a suspended machine does.
type Clock interface {
	Now() time.Duration
	Epoch() string
	Wall() time.Time
}

// SuspendClock returns the clock a Manager measures local deadlines on
// unless WithClock says otherwise.
//
// On Linux, Now reads CLOCK_BOOTTIME, which keeps counting while the machine
// is suspended (a laptop lid, a frozen VM), as the SQLite store's clock does.
// Go's own monotonic clock, behind time.Since and every timer, stops during
// suspend: a handle measuring on it would wake from a suspend longer than
// the time left still believing in a lease the store has expired. Epoch is
// "": a process does not outlive its boot. Wall is time.Now in UTC.
//
// Elsewhere Now is Go's monotonic clock, which may stop while the machine
// sleeps.
func SuspendClock() Clock { return suspendClock{} }

type suspendClock struct{}

func (suspendClock) Now() time.Duration { return bootTime() }
func (suspendClock) Epoch() string      { return "" }
func (suspendClock) Wall() time.Time    { return time.Now().UTC() }
