package sqlite

import (
	"fmt"
	"strings"
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

// DumpWaiters describes the waiters table, for a test's failure message.
func DumpWaiters(s *Store) string {
	rows, err := s.rdb.Query("SELECT seq, name, holder, process = ?, token FROM waiters ORDER BY seq", s.bell.id)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var seq, tok int64
		var name, holder string
		var mine bool
		if err := rows.Scan(&seq, &name, &holder, &mine, &tok); err != nil {
			return err.Error()
		}
		out = append(out, fmt.Sprintf("seq %d %s %s mine=%v token=%d", seq, name, holder, mine, tok))
	}
	return strings.Join(out, "; ")
}
