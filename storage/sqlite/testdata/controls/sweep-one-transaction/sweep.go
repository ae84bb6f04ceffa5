package sqlite

import (
	"context"
	"fmt"
)

// Control (mutant) of sweep.go for TestWALSmallAfterSweep: the old sweep,
// every expired row deleted in one transaction, which grows the -wal to the
// size of all of them.

func (s *Store) Sweep(ctx context.Context) (int, error) {
	res := s.submit(ctx, newOp(opSweep))
	return res.n, res.err
}

func (b *batch) sweep(o *op) (result, error) {
	res, err := b.s.w.conn.ExecContext(b.ctx, "DELETE FROM leases WHERE expires_at + lock_delay_ms * 1000000 <= ?", int64(b.now))
	if err != nil {
		return result{}, fmt.Errorf("sweep: %w", err)
	}
	if _, err := b.s.w.sweepWaiters.ExecContext(b.ctx, int64(b.now), b.s.waiters.process()); err != nil {
		return result{}, fmt.Errorf("sweep waiters: %w", err)
	}
	n, err := res.RowsAffected()
	return result{n: int(n)}, err
}
