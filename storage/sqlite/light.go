package sqlite

import (
	"context"
	"fmt"
)

// Light batches. A waiting call's own batches (its try that queues it, its
// polls that find nothing to claim) change only waiters rows, which a power
// loss may take back: after a power loss every process is gone, and so is
// every waiter. Not so a claim: it answers a grant to whoever the call
// serves, who may outlive the host (an HTTP client of picket serve), and a
// claim a power loss undid would bring back its row, still marked, and the
// grant would look unclaimed and be taken back after the restart while
// its holder still believes in it (issue 39, TestPowerLossClaim). So a
// claim is left to a full batch, like a grant.
// Such a batch commits with synchronous=NORMAL: written to the -wal, not
// synced, which spares a waiting call an fsync for queueing and for each
// poll that finds the name still held. But what a batch commits is readable at once by every process
// (picket ls, a watch, another process's poll), synced or not: so a light
// batch never commits what must survive a power loss. An op of a light
// batch that would (a try or a poll that finds the name free and would
// grant it or serve the queue, the holder's own lease extended, a lapsed
// grant taken back, a grant claimed) writes nothing and is left for a
// full batch (acquire, revokeLapsed and poll's claim ask deferFull before
// they write), which
// runs right after the light one commits (writer.go: runBatch):
// every grant, in every batch, is on disk before anyone can read it
// (TestPowerLossReaders). A waiting call's first try is light only when
// the name looks held (heldNow), so that this costs an extra transaction
// only when the guess was wrong, or the poll is the one that serves.

// lightBatch reports whether ops are all a waiting call's or the writer's
// own, none of them left by a light batch already.
func lightBatch(ops []*op) bool {
	for _, o := range ops {
		switch {
		case o.full:
			return false
		case o.kind == opWait, o.kind == opLapse, o.kind == opSync:
		case o.kind == opAcquire && o.parked != nil && o.light:
		default:
			return false
		}
	}
	return true
}

// deferFull reports whether the batch is light, and then marks the op
// being applied as left for a full batch: its caller returns at once,
// having written nothing.
func (b *batch) deferFull() bool {
	if b.light {
		b.deferred = true
	}
	return b.light
}

// heldNow reports whether name looks held, from the read pool: a waiting
// call's first try is light only if it will most likely queue (a guess:
// when it is wrong, the try is left for a full batch).
func (s *Store) heldNow(ctx context.Context, name string) bool {
	var one int
	err := s.rdb.QueryRowContext(ctx, "SELECT 1 FROM leases WHERE name = ? AND expires_at + lock_delay_ms * 1000000 > ?",
		name, int64(s.clock.Now())).Scan(&one)
	return err == nil
}

// setSync sets the writer connection's synchronous mode (outside a
// transaction: SQLite refuses to change it inside one).
func (s *Store) setSync(ctx context.Context, mode string) error {
	if _, err := s.w.conn.ExecContext(ctx, "PRAGMA synchronous = "+mode); err != nil {
		return fmt.Errorf("synchronous %s: %w", mode, err)
	}
	return nil
}
