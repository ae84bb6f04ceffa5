package sqlite_test

import (
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/sqlite"
)

// cycles acquires and releases name n times (two events each).
func cycles(t *testing.T, s *sqlite.Store, name string, n int) {
	t.Helper()
	for i := range n {
		g := acquire(t, s, name, "h", time.Minute)
		if err := s.Release(t.Context(), lease.ReleaseRequest{Name: name, Holder: "h", Token: g.Token}); err != nil {
			t.Fatal(i, err)
		}
	}
}

// allEvents reads the whole history, page by page.
func allEvents(t *testing.T, s *sqlite.Store) []lease.Event {
	t.Helper()
	var out []lease.Event
	req := lease.HistoryRequest{Limit: lease.MaxHistoryLimit}
	for range 1000 {
		page, err := s.History(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Events...)
		if page.Next == 0 {
			return out
		}
		req.After = page.Next
	}
	t.Fatal("history: more than 1000 pages")
	return nil
}

// TestHistoryPrunedByItself: the writer keeps the history within its
// retention with no PruneHistory call, by count (a prune that finds room
// lets the next wait until the room could be full, never past it by more
// than a few chunks of events) and by age (as soon as the oldest row comes
// of age, not after another thousand events).
func TestHistoryPrunedByItself(t *testing.T) {
	t.Run("count", func(t *testing.T) {
		s := mustOpen(t, sqlite.WithHistory(2000, 0))
		cycles(t, s, "n", 6000) // 12,000 events
		cycles(t, s, "n", 1)    // after the prune the last batch queued
		if n := len(allEvents(t, s)); n > 2000+3*1024 || n < 1000 {
			t.Errorf("%d events kept of 12,002, want about 2,000", n)
		}
	})
	t.Run("age", func(t *testing.T) {
		clk := leasetest.NewClock()
		s := mustOpen(t, sqlite.WithClock(clk), sqlite.WithHistory(100000, time.Hour))
		cycles(t, s, "old", 600) // past pruneEvery: a prune finds nothing old
		clk.Advance(2 * time.Hour)
		cycles(t, s, "new", 2) // the first sees the oldest row of age and queues a prune
		for _, e := range allEvents(t, s) {
			if e.Name == "old" {
				t.Fatalf("an event two hours old was kept after a prune was due: %+v", e)
			}
		}
	})
}
