package sqlite

import (
	"errors"
	"fmt"
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
// cannot change its own offset). If either cannot be read (the boot id is
// missing or empty, the offsets exist but cannot be read), Epoch is "" and
// Open refuses the clock with ErrNoEpoch: two processes in different time
// namespaces that both failed to read theirs would share the empty epoch
// without sharing a clock.
//
// Elsewhere, Now is the wall clock (nanoseconds since 1970) and Epoch is "":
// a wall-clock step there moves every deadline (a lease can end early or
// late; fencing still rejects a stale writer).
//
// Wall is time.Now in UTC; it only renders deadlines for people.
func SystemClock() lease.Clock {
	epoch, err := clockEpoch()
	return systemClock{epoch: epoch, err: err}
}

type systemClock struct {
	epoch string
	err   error // why the epoch could not be read
}

// ErrNoEpoch is returned by Open when the system clock's epoch (the boot id,
// and the time namespace's offset of the boot clock) cannot be read: the
// store could not tell a process in another time namespace, whose boot
// clock disagrees with this one's, from one that shares it.
var ErrNoEpoch = errors.New("sqlite: the clock's epoch cannot be read")

// checkClock refuses a system clock whose epoch could not be read.
func checkClock(c lease.Clock) error {
	if sc, ok := c.(systemClock); ok && sc.err != nil {
		return fmt.Errorf("%w: %v; picket compares it at every write to tell whether every opener of the file "+
			"counts time on one boot clock (check that /proc is mounted and readable)", ErrNoEpoch, sc.err)
	}
	return nil
}

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
