package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// Sweeping in chunks. One DELETE of every expired row is one transaction,
// and SQLite's -wal grows to hold every page it changed (a million expired
// leases: 50 MB) and keeps that size until the store closes. So Sweep
// deletes a bounded range of names per transaction, walking the table in
// name order: each chunk is an operation of its own, committed with
// whatever batch it rides in, so grants go on between chunks and the
// checkpoints that follow each commit keep the -wal small (wal.go).

// sweepChunk is how many rows one sweep transaction examines (deletes at
// most): a few hundred kilobytes of -wal.
const sweepChunk = 1 << 62 // mutant: the old sweep, every row in one transaction

// Sweep deletes the rows of leases that have expired and whose lock-delay
// has passed, and returns how many. It is housekeeping: an expired row is
// never in the way of a grant. It works in chunks of sweepChunk rows, one
// transaction each; if ctx ends or a chunk fails, the rows of the chunks
// before stay deleted and their count is returned with the error.
//
// Errors: ErrClosed, a *FailedError or another error matching
// lease.ErrUnavailable, or ctx's error.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	total := 0
	after := ""
	for {
		o := newOp(opSweep)
		o.name = after
		res := s.submit(ctx, o)
		total += res.n
		if res.err != nil || res.next == "" {
			return total, res.err
		}
		after = res.next
	}
}

// sweep deletes the expired rows among the next sweepChunk names after
// o.name; the first chunk also deletes the waiters rows of other processes
// that stopped refreshing them (this process's own rows are its calls',
// alive or forgotten).
func (b *batch) sweep(o *op) (result, error) {
	var last sql.NullString
	var n int
	if err := b.s.w.conn.QueryRowContext(b.ctx,
		"SELECT max(name), count(*) FROM (SELECT name FROM leases WHERE name > ? ORDER BY name LIMIT ?)",
		o.name, sweepChunk).Scan(&last, &n); err != nil {
		return result{}, fmt.Errorf("sweep: find the chunk after %q: %w", o.name, err)
	}
	var res result
	if last.Valid {
		r, err := b.s.w.sweep.ExecContext(b.ctx, o.name, last.String, int64(b.now))
		if err != nil {
			return result{}, fmt.Errorf("sweep: %w", err)
		}
		deleted, err := r.RowsAffected()
		if err != nil {
			return result{}, fmt.Errorf("sweep: %w", err)
		}
		res.n = int(deleted)
		if n == sweepChunk {
			res.next = last.String
		}
	}
	if o.name == "" {
		if _, err := b.s.w.sweepWaiters.ExecContext(b.ctx, int64(b.now), b.s.waiters.process()); err != nil {
			return result{}, fmt.Errorf("sweep waiters: %w", err)
		}
	}
	return res, nil
}
