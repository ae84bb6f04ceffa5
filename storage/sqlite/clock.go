package sqlite

import (
	"strings"
	"time"

	"github.com/picketlock/picket/lease"
)

// SystemClock returns the clock a Store uses unless told otherwise.
//
// On Linux, Now reads CLOCK_BOOTTIME: monotonic, counting time spent in
// suspend, the same for every process of one time namespace on the host (so
// processes sharing a file agree on every deadline) and unmoved by any
// wall-clock step. Epoch is the host's boot id
// (/proc/sys/kernel/random/boot_id) and, in a time namespace whose boot
// clock is offset (unshare -T --boottime N), that offset
// (/proc/self/timens_offsets): "<boot id>" alone without an offset,
// "<boot id> boottime <s> <ns>" with one. Both are read once (a process
// cannot change its own offset). If the boot id cannot be read it is "",
// which stays safe because the boot clock restarts near zero: a deadline
// from an earlier boot then looks later than it really is, never earlier.
//
// Elsewhere, Now is the wall clock (nanoseconds since 1970) and Epoch is "":
// a wall-clock step there moves every deadline (a lease can end early or
// late; fencing still rejects a stale writer).
//
// Wall is time.Now in UTC; it only renders deadlines for people.
func SystemClock() lease.Clock { return systemClock{epoch: clockEpoch()} }

type systemClock struct{ epoch string }

func (c systemClock) Now() time.Duration { return bootTime() }
func (c systemClock) Epoch() string      { return c.epoch }
func (c systemClock) Wall() time.Time    { return time.Now().UTC() }

// epochOf names the epoch of a boot clock: the boot id, and the boottime
// offset of the process's time namespace when there is one ("" or "0 0":
// none, so a file written before offsets counted keeps its epoch).
func epochOf(bootID, offset string) string {
	if offset == "" || offset == "0 0" {
		return bootID
	}
	return bootID + " boottime " + offset
}

// boottimeOffset returns "<seconds> <nanoseconds>" from the boottime line of
// the text of /proc/<pid>/timens_offsets, or "" if it has none.
func boottimeOffset(offsets string) string {
	for line := range strings.Lines(offsets) {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "boottime" {
			return f[1] + " " + f[2]
		}
	}
	return ""
}
