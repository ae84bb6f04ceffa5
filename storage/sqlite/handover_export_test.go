package sqlite

// Parked returns how many acquires wait in s's queue for name, for tests
// that must know a waiter is queued before they release.
func Parked(s *Store, name string) int {
	s.waiters.mu.Lock()
	defer s.waiters.mu.Unlock()
	return len(s.waiters.m[name])
}
