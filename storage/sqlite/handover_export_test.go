package sqlite

import (
	"fmt"
	"strings"
	"time"
)

// Parked returns how many acquires wait in s's queue for name, for tests
// that must know a waiter is queued before they release.
func Parked(s *Store, name string) int {
	s.waiters.mu.Lock()
	defer s.waiters.mu.Unlock()
	return len(s.waiters.m[name])
}

// Queued returns how many operations wait in s's queue for the writer.
func Queued(s *Store) int { return len(s.ops) }

// SetStoreHook sets the function s's writer calls at its named points (see
// hooks.go), after the process-wide one; nil removes it.
func SetStoreHook(s *Store, h func(point string)) {
	if h == nil {
		s.w.testHook.Store(nil)
		return
	}
	s.w.testHook.Store(&h)
}

// SetLegacySettle brings back (true) or removes (false) the old answer of a
// waiting Acquire whose wait ran out while a release handed it the name:
// "held". For the control of the hand-over test; not for parallel tests.
func SetLegacySettle(on bool) { legacySettle.Store(on) }

// SetLegacyLockDelay brings back (true) or removes (false) the old rule of
// lock-delay: each opener's own option, nothing kept with the lease. For
// the control of the two-opener test; not for parallel tests.
func SetLegacyLockDelay(on bool) { legacyLockDelay.Store(on) }

// SetLegacyEpochCache brings back (true) or removes (false) the old epoch
// rule: a batch compares the clock's epoch with the one cached when the
// store last wrote, not with the file's. For the control of the epoch
// tests; not for parallel tests.
func SetLegacyEpochCache(on bool) { legacyEpochCache.Store(on) }

// EpochOf and BoottimeOffset expose how the system clock names its epoch.
var (
	EpochOf        = epochOf
	BoottimeOffset = boottimeOffset
)

// Waiting returns how many rows wait in the file's queue for name, of any
// process (granted rows not counted).
func Waiting(s *Store, name string) int {
	var n int
	if err := s.rdb.QueryRow("SELECT COUNT(*) FROM waiters WHERE name = ? AND token = 0", name).Scan(&n); err != nil {
		return -1
	}
	return n
}

// SetLegacyHandOver brings back (true) or removes (false) the old queue:
// waiters in this process only. For the controls of the cross-process
// waiter tests; not for parallel tests.
func SetLegacyHandOver(on bool) { legacyHandOver.Store(on) }

// SetLegacyDeadWaiters makes a hand-over serve expired waiters rows like
// live ones (true), for the control of the dead-waiter test.
func SetLegacyDeadWaiters(on bool) { legacyDeadWaiters.Store(on) }

// SetNoWatch turns the change notification off (true): waiters of other
// processes are found by their timers only.
func SetNoWatch(on bool) { noWatch.Store(on) }

// SetWaitFallback sets the longest backoff of a queued waiting Acquire
// (zero: the default, 250 ms).
func SetWaitFallback(d time.Duration) { waitFallbackOverride.Store(int64(d)) }

// SetWaiterTTL sets how long a waiters row lives without a refresh (zero:
// the default, 2 s); the waiting call refreshes it every quarter of that.
func SetWaiterTTL(d time.Duration) { waiterTTLOverride.Store(int64(d)) }

// DumpWaiters describes the waiters table, for a test's failure message.
func DumpWaiters(s *Store) string {
	rows, err := s.rdb.Query("SELECT seq, name, holder, process = ?, expires_at, token FROM waiters ORDER BY seq", s.waiters.process())
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var seq, exp, tok int64
		var name, holder string
		var mine bool
		if err := rows.Scan(&seq, &name, &holder, &mine, &exp, &tok); err != nil {
			return err.Error()
		}
		out = append(out, fmt.Sprintf("seq %d %s %s mine=%v exp=%d token=%d", seq, name, holder, mine, exp, tok))
	}
	return strings.Join(out, "; ")
}
