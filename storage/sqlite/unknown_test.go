package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/sqlitetest"
	"github.com/picketlock/picket/lease"
)

// loseAnswer is the conformance suite's Harness.LoseAnswer for SQLite: a
// store in a new file, and a lose that holds the file's write lock from
// another connection (BEGIN IMMEDIATE) while the write is sent, so that the
// write waits in the store's batch until its context ends; then the lock is
// let go and the batch commits.
func loseAnswer(t *testing.T) (lease.Store, func(write func(ctx context.Context) error) error) {
	path := filepath.Join(t.TempDir(), "picket.db")
	st := mustOpenPath(t, path)
	return st, func(write func(ctx context.Context) error) error {
		return withWriteLock(t, path, write)
	}
}

// withWriteLock runs write with a context that ends 200 ms after it starts,
// while another connection holds the write lock of the file at path.
func withWriteLock(t *testing.T, path string, write func(ctx context.Context) error) error {
	t.Helper()
	unlock := sqlitetest.HoldWriteLock(t, path)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	err := write(ctx)
	cancel()
	unlock()
	return err
}
