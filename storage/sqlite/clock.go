package sqlite

import (
	"time"

	"github.com/picketlock/picket/lease"
)

// SystemClock returns the clock a Store uses unless told otherwise.
//
// On Linux, Now reads CLOCK_BOOTTIME: monotonic, counting time spent in
// suspend, the same for every process on the host (so processes sharing a
// file agree on every deadline) and unmoved by any wall-clock step. Epoch is
// the host's boot id (/proc/sys/kernel/random/boot_id), read once; if it
// cannot be read the epoch is "", which stays safe because the boot clock
// restarts near zero: a deadline from an earlier boot then looks later than
// it really is, never earlier.
//
// Elsewhere, Now is the wall clock (nanoseconds since 1970) and Epoch is "":
// a wall-clock step there moves every deadline (a lease can end early or
// late; fencing still rejects a stale writer).
//
// Wall is time.Now in UTC; it only renders deadlines for people.
func SystemClock() lease.Clock { return systemClock{epoch: bootID()} }

type systemClock struct{ epoch string }

func (c systemClock) Now() time.Duration { return bootTime() }
func (c systemClock) Epoch() string      { return c.epoch }
func (c systemClock) Wall() time.Time    { return time.Now().UTC() }
