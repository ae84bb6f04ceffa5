package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/sqlite"
)

// TestConformance runs the lease.Store conformance suite against stores in
// real files.
func TestConformance(t *testing.T) {
	leasetest.Run(t, leasetest.Harness{
		Open: func(t testing.TB, cfg leasetest.Config) lease.Store {
			opts := []sqlite.Option{sqlite.WithLockDelay(cfg.LockDelay)}
			if cfg.Clock != nil { // not a nil *Clock in a lease.Clock
				opts = append(opts, sqlite.WithClock(cfg.Clock))
			}
			return mustOpenPath(t, filepath.Join(t.TempDir(), "picket.db"), opts...)
		},
		LoseAnswer: loseAnswer, // unknown_test.go
	})
}
