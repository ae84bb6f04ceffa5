package linearize_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/lease/leasetest/linearize"
	"github.com/picketlock/picket/storage/sqlite"
)

// TestControls runs the workload against stores broken on purpose, one
// promise each, and requires porcupine to find every history illegal: each
// check of the model is shown to catch the bug it is there for. Calls are
// not cancelled, so every lie is in a definite answer, except where the
// broken promise is about cancelled calls.
func TestControls(t *testing.T) {
	tests := []struct {
		name   string
		broken func(*leasetest.Clock, *sqlite.Store) brokenStore
		caught string // the part of the history that must fail: "tokens", "lease" or "key"
		cancel bool   // cancel calls at random, as the workload does by default
	}{
		{"counter repeats", func(_ *leasetest.Clock, st *sqlite.Store) brokenStore { return newRepeatingCounter(st) }, "tokens", false},
		{"held name granted again", func(_ *leasetest.Clock, st *sqlite.Store) brokenStore { return newDoubleGranter(st) }, "lease", false},
		{"fenced put accepts a lower token", func(_ *leasetest.Clock, st *sqlite.Store) brokenStore { return &lowFence{Store: st} }, "key", false},
		{"fenced get misses the highest", func(_ *leasetest.Clock, st *sqlite.Store) brokenStore { return &staleRead{Store: st} }, "key", false},
		{"deadline reported late", func(_ *leasetest.Clock, st *sqlite.Store) brokenStore { return &lateDeadline{Store: st} }, "lease", false},
		{"a cancelled acquire granted later", func(clk *leasetest.Clock, st *sqlite.Store) brokenStore {
			return &lateCommit{Store: st, clock: clk}
		}, "lease", false},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := leasetest.NewClock()
			st := openStore(t, clk)
			broken := tc.broken(clk, st)
			rec := linearize.NewRecorder(clk)
			w := defaultWorkload(uint64(1000 + i))
			w.phases = 12
			if !tc.cancel {
				w.cancel = 0
			}
			tg := target{
				clock:  clk,
				begin:  func(testing.TB) (lease.Store, linearize.KV) { return broken, broken },
				settle: func(t testing.TB) { flush(t, st) },
			}
			w.run(t, tg, rec)
			if broken.lies() == 0 {
				t.Fatal("the broken store never lied: the control proves nothing")
			}
			ops := rec.Operations()
			if got := linearize.Check(ops, linearize.Config{}, checkTimeout); got != porcupine.Illegal {
				t.Errorf("porcupine on %d operations with %d lies = %s, want %s", len(ops), broken.lies(), got, porcupine.Illegal)
			}
			failing := linearize.Failing(ops, linearize.Config{}, checkTimeout)
			t.Logf("%d operations, %d lies; failing parts: %q", len(ops), broken.lies(), failing)
			if !slices.ContainsFunc(failing, func(f string) bool { return strings.HasPrefix(f, tc.caught) }) {
				t.Errorf("no %s part of the history failed; failing: %q", tc.caught, failing)
			}
			closeAndCheckFile(t, st)
		})
	}
}
