package sqlite_test

import (
	"testing"
	"time"

	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/sqlite"
)

// TestSweep: Sweep deletes the rows of expired leases once their lock-delay
// has passed, and nothing else.
func TestSweep(t *testing.T) {
	clk := leasetest.NewClock()
	s := mustOpen(t, sqlite.WithClock(clk), sqlite.WithLockDelay(5*time.Second))
	ctx := ctxT(t)
	acquire(t, s, "short", "h", 10*time.Second)
	acquire(t, s, "long", "h", 20*time.Second)
	for _, step := range []struct {
		advance time.Duration
		swept   int
		rows    int
	}{
		{0, 0, 2},
		{12 * time.Second, 0, 2},  // short expired, in its lock-delay
		{3 * time.Second, 1, 1},   // short's lock-delay over
		{9 * time.Second, 0, 1},   // long expired at 20 s, in its lock-delay until 25 s
		{100 * time.Second, 1, 0}, // all gone
	} {
		clk.Advance(step.advance)
		n, err := s.Sweep(ctx)
		if err != nil || n != step.swept {
			t.Errorf("at +%v: Sweep = %d, %v; want %d", step.advance, n, err, step.swept)
		}
		if st := readFileState(t, s.Path()); st.Leases != step.rows {
			t.Errorf("at +%v: %d rows left, want %d", step.advance, st.Leases, step.rows)
		}
	}
	if g := acquire(t, s, "short", "other", time.Second); g.Token != 3 {
		t.Errorf("after the sweep: token %d, want 3", g.Token)
	}
}
