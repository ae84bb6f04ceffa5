package sqlite

import (
	"context"
	"fmt"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/picketlock/picket/lease"
)

// A store is healthy when it can grant. Three things say it cannot, and
// Health reports each: it failed closed (an I/O error or corruption on a
// commit: FailedError), its last write failed (the disk was full, the file
// read-only, or locked by another process past the busy timeout — it may
// pass, and the next write that commits clears it), or a read fails (the
// file is gone, corrupt or unreadable).

// writeFailure is the failure of the store's last write batch.
type writeFailure struct {
	err    error
	reason string
	at     time.Time
}

// noteBatch remembers how a batch ended: its error, or, once a batch
// committed a write (an operation of it succeeded), that writes work.
func (s *Store) noteBatch(ops []*op, results []result, err error) {
	if err != nil {
		s.lastErr.Store(&writeFailure{err: err, reason: failureReason(err), at: time.Now()})
		return
	}
	if s.lastErr.Load() == nil {
		return
	}
	for i, o := range ops {
		if i < len(results) && results[i].err == nil && o.kind != opSync {
			s.lastErr.Store(nil)
			return
		}
	}
}

// failureReason names what a failed batch says of the file.
func failureReason(err error) string {
	switch {
	case isFull(err):
		return "disk full"
	case sqliteCode(err) == sqlite3.SQLITE_READONLY:
		return "read-only"
	case isBusy(err):
		return "locked by another process"
	case isFatal(err):
		return "I/O error or corruption"
	}
	return "write failed"
}

// Health returns nil when the store can grant as far as it knows: it has
// not failed closed, it is not low on disk space (reserve.go: at Open too,
// so a store restarted on a full disk is unhealthy), its last write did not
// fail, and it answers a read.
// Errors, each matching lease.ErrUnavailable and saying why: a
// *FailedError after a failed commit or once the store's path no longer
// names its file (ErrMoved), the failure of the last write ("disk
// full", "read-only", ...) until a write commits again, ErrClosed, or the
// error of the read.
func (s *Store) Health(ctx context.Context) error {
	if f := s.failure.Load(); f != nil {
		return f
	}
	select {
	case <-s.closing:
		return ErrClosed
	default:
	}
	if err := s.checkPlace(); err != nil { // moved.go
		return s.fail(err)
	}
	if s.space.low.Load() { // reserve.go: measured at Open too
		return fmt.Errorf("sqlite: health: %w", s.lowError())
	}
	if w := s.lastErr.Load(); w != nil {
		return fmt.Errorf("sqlite: health: the last write failed at %s: %s (%v): %w",
			w.at.UTC().Format(time.RFC3339), w.reason, w.err, lease.ErrUnavailable)
	}
	var n int64
	if err := s.read(ctx, "health", func() error {
		return s.rdb.QueryRowContext(ctx, "SELECT value FROM counter WHERE id = 1").Scan(&n)
	}); err != nil {
		return fmt.Errorf("sqlite: health: %w: %w", lease.ErrUnavailable, err)
	}
	return nil
}
