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
// never cancelled here, so every lie is in a definite answer.
func TestControls(t *testing.T) {
	tests := []struct {
		name   string
		broken func(*sqlite.Store) brokenStore
		caught string // the part of the history that must fail: "tokens", "lease" or "key"
	}{
		{"counter repeats", func(st *sqlite.Store) brokenStore { return newRepeatingCounter(st) }, "tokens"},
		{"held name granted again", func(st *sqlite.Store) brokenStore { return newDoubleGranter(st) }, "lease"},
		{"fenced put accepts a lower token", func(st *sqlite.Store) brokenStore { return &lowFence{Store: st} }, "key"},
		{"fenced get misses the highest", func(st *sqlite.Store) brokenStore { return &staleRead{Store: st} }, "key"},
		{"deadline reported late", func(st *sqlite.Store) brokenStore { return &lateDeadline{Store: st} }, "lease"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := leasetest.NewClock()
			st := openStore(t, clk)
			broken := tc.broken(st)
			rec := linearize.NewRecorder(clk)
			w := defaultWorkload(uint64(1000 + i))
			w.cancel, w.phases = 0, 6
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
