package sqlite

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
