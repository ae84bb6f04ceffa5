package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
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
//
// An epoch that cannot be read is an error, never "": two processes that
// both failed to read theirs would share the empty epoch without sharing a
// clock (Open refuses such a clock: ErrNoEpoch).
var clockEpoch = sync.OnceValues(func() (string, error) {
	// MUTANT (controls/epoch-unreadable): the old rule, an epoch that
	// cannot be read is "", which every such opener shares.
	id, _ := bootID()
	off, _ := timensBoottime()
	return epochOf(id, off), nil
})

const bootIDFile = "/proc/sys/kernel/random/boot_id"

func bootID() (string, error) {
	b, err := os.ReadFile(bootIDFile)
	if err != nil {
		return "", fmt.Errorf("read the boot id: %w", err)
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		return "", fmt.Errorf("read the boot id: %s is empty", bootIDFile)
	}
	return id, nil
}

// timensBoottime returns the boottime line of /proc/self/timens_offsets
// ("<seconds> <nanoseconds>"), "" where the file does not exist (a kernel
// without time namespaces: no offset), or an error where it exists but
// cannot be read or has no boottime line.
func timensBoottime() (string, error) {
	b, err := os.ReadFile("/proc/self/timens_offsets")
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the time namespace's offsets: %w", err)
	}
	off := boottimeOffset(string(b))
	if off == "" {
		return "", fmt.Errorf("read the time namespace's offsets: no boottime line in %q", b)
	}
	return off, nil
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
