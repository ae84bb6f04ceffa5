package memory_test

import (
	"testing"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/memory"
)

func TestConformance(t *testing.T) {
	// Every write answers under the store's mutex: its outcome is always
	// known.
	leasetest.Run(t, leasetest.Harness{Open: open, OutcomeAlwaysKnown: true})
}

// open is the conformance harness: a new store on cfg's clock.
func open(t testing.TB, cfg leasetest.Config) lease.Store {
	opts := []memory.Option{memory.WithLockDelay(cfg.LockDelay)}
	if cfg.Clock != nil { // a nil *leasetest.Clock in a lease.Clock would not be nil
		opts = append(opts, memory.WithClock(cfg.Clock))
	}
	return newStore(t, opts...)
}

// newStore returns a new store; an error from New fails the test.
func newStore(t testing.TB, opts ...memory.Option) *memory.Store {
	t.Helper()
	st, err := memory.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
