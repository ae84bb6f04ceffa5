package sqlite

import (
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// clockEpoch is the epoch of this process's CLOCK_BOOTTIME: the host's boot
// id and, inside a time namespace (unshare -T, CLONE_NEWTIME), that
// namespace's boottime offset. Processes in different time namespaces share
// the boot id but not the boot clock: one started with
// `unshare -T --boottime 3600` reads an hour more. A process's offset
// cannot change once it runs, so this is read once.
var clockEpoch = sync.OnceValue(func() string {
	return epochOf(bootID(), timensBoottime())
})

func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// timensBoottime returns the boottime line of /proc/self/timens_offsets
// ("<seconds> <nanoseconds>"), or "" where the file does not exist (a
// kernel without time namespaces: no offset) or cannot be read.
func timensBoottime() string {
	b, err := os.ReadFile("/proc/self/timens_offsets")
	if err != nil {
		return ""
	}
	return boottimeOffset(string(b))
}

func bootTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		// CLOCK_BOOTTIME exists since Linux 2.6.39; without it no deadline
		// can be trusted.
		panic("sqlite: clock_gettime(CLOCK_BOOTTIME): " + err.Error())
	}
	return time.Duration(ts.Nano())
}
