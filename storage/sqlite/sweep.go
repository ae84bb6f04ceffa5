package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/picketlock/picket/token"
)

// Sweeping in chunks. One DELETE of every expired row is one transaction,
// and SQLite's -wal grows to hold every page it changed (a million expired
// leases: 50 MB) and keeps that size until the store closes. So Sweep
// deletes at most sweepChunk rows per transaction, walking the table in
// name order: each chunk is an operation of its own, committed with
// whatever batch it rides in, so grants go on between chunks and the
// checkpoints that follow each commit keep the -wal small (wal.go).

// sweepChunk is the most rows one sweep transaction deletes: a few hundred
// kilobytes of -wal.
const sweepChunk = 2000

// Sweep deletes the rows of leases that have expired and whose lock-delay
// has passed, and returns how many. It is housekeeping: an expired row is
// never in the way of a grant. It deletes at most sweepChunk rows per
// transaction; if ctx ends or a chunk fails, the rows of the chunks
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

// expired is a row a sweep deleted, for the history.
type expired struct {
	name string
	r    row
}

// sweep deletes the next sweepChunk expired rows after o.name, in name
// order (one statement, which reads on past live rows: only the rows it
// deletes reach the -wal); the first chunk also deletes the waiters rows of
// processes that died (this process's own rows are its calls', alive or
// forgotten).
func (b *batch) sweep(o *op) (result, error) {
	rows, err := b.s.w.sweep.QueryContext(b.ctx, o.name, int64(b.now), sweepChunk)
	if err != nil {
		return result{}, fmt.Errorf("sweep: %w", err)
	}
	var res result
	last := ""
	var swept []expired
	for rows.Next() {
		var name string
		var r row
		var tok, exp int64
		if err := rows.Scan(&name, &tok, &r.owner, &exp); err != nil {
			rows.Close()
			return result{}, fmt.Errorf("sweep: %w", err)
		}
		r.token, r.expires = token.Token(tok), time.Duration(exp)
		swept = append(swept, expired{name, r})
		res.n++
		last = max(last, name)
	}
	if err := rows.Close(); err != nil {
		return result{}, fmt.Errorf("sweep: %w", err)
	}
	if err := rows.Err(); err != nil {
		return result{}, fmt.Errorf("sweep: %w", err)
	}
	for _, e := range swept {
		if err := b.recordExpiry(e.name, e.r, ""); err != nil { // history.go
			return result{}, err
		}
		if err := b.ended(e.name, e.r.token, int64(e.r.expires)); err != nil { // ended.go
			return result{}, err
		}
	}
	if res.n == sweepChunk {
		res.next = last
	} else if _, err := b.prune(o); err != nil { // history.go: a chunk of it, with the sweep's last
		return result{}, err
	}
	if o.name == "" {
		if err := b.sweepWaiters(); err != nil {
			return result{}, err
		}
	}
	return res, nil
}
