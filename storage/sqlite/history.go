package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// The grant history (lease.HistoryReader). Each event is one prepared
// INSERT in the transaction of the change it records: a grant, a release,
// a revoke, a fenced rejection as the batch makes it; an expiry when the
// store finds the expired row, which is when it removes it — a grant that
// takes over the name (acquire's slow path: grantFree never overwrites a
// row), the sweep (Sweep, every few seconds under picket serve), or a
// grant to a waiter taken back unclaimed. An expiry's time is the lease's
// deadline, rendered in wall-clock time, so it may come before the time
// of the event recorded before it.
//
// Retention (WithHistory): at most maxEvents, none older than maxAge. The
// writer queues a prune (opPrune, a batch of its own, nobody waiting on
// it) once pruneEvery events were written since the last, and Sweep's
// last chunk prunes one chunk too; each prune deletes at most pruneChunk rows, oldest first,
// so that no transaction grows the -wal much. The newest event is never
// pruned by age, so that seq keeps rising (it is the rowid).

// WithHistory keeps at most maxEvents events of history, none older than
// maxAge (defaults lease.DefaultHistoryMaxEvents and
// lease.DefaultHistoryMaxAge: about 10 MB of the file). maxEvents 0 turns
// the history off (nothing is written; History answers what is left until a
// prune clears it); maxAge 0 keeps events of any age.
func WithHistory(maxEvents int, maxAge time.Duration) Option {
	return func(cfg *config) { cfg.historyMax, cfg.historyAge = maxEvents, maxAge }
}

const (
	pruneEvery = 1024 // events written between two prunes the writer queues
	pruneChunk = 4096 // the most rows one prune deletes
)

// historyState is the store's retention and the writer goroutine's count
// of events since the last prune.
type historyState struct {
	max   int
	age   time.Duration
	added int // the writer goroutine's only
}

// historyStmts are the writer's prepared statements of the history.
type historyStmts struct {
	add, bounds, firstYoung, prune     *sql.Stmt
	pruneRevoked, revoked, markRevoked *sql.Stmt

	buf []byte // the writer's buffer for a row's events
}

// rowEvents is the most events one history row holds.
const rowEvents = 1024

// event is one row of the history, as a batch collects it.
type event struct {
	at                       int64 // wall clock, Unix nanoseconds
	kind                     lease.EventKind
	name                     string
	tok                      token.Token
	owner, reason, revokedBy string
}

func (w *writer) prepareHistory(ctx context.Context) error {
	for _, p := range []struct {
		stmt  **sql.Stmt
		query string
	}{
		// Every query of the prune is a rowid lookup or a range of it, but
		// firstYoung, which reads the old events from the oldest until the
		// first young one: a prune costs what it deletes, not the table.
		// A row's seq follows the last row's events: two rowid lookups.
		{&w.h.add, `INSERT INTO history (seq, at, n, events) VALUES (
			coalesce((SELECT seq + n FROM history WHERE seq = (SELECT max(seq) FROM history)), 1), ?, ?, ?)`},
		{&w.h.bounds, `SELECT (SELECT min(seq) FROM history), (SELECT seq + n - 1 FROM history WHERE seq = (SELECT max(seq) FROM history))`},
		{&w.h.firstYoung, `SELECT seq FROM history WHERE at >= ? ORDER BY seq LIMIT 1`},
		{&w.h.prune, `DELETE FROM history WHERE seq BETWEEN ? AND ?`},
		{&w.h.pruneRevoked, `DELETE FROM revoked WHERE at < ?`},
		{&w.h.revoked, `SELECT reason, revoked_by, at FROM revoked WHERE name = ? AND token = ?`},
		{&w.h.markRevoked, `INSERT INTO revoked (name, token, reason, revoked_by, at) VALUES (?1, ?2, ?3, ?4, ?5)
			ON CONFLICT (name) DO UPDATE SET token = ?2, reason = ?3, revoked_by = ?4, at = ?5`},
	} {
		st, err := w.conn.PrepareContext(ctx, p.query)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", p.query, err)
		}
		*p.stmt = st
	}
	return nil
}

func (w *writer) closeHistory() error {
	var errs []error
	for _, st := range append([]*sql.Stmt{w.h.add}, w.h.bounds, w.h.firstYoung, w.h.prune, w.h.pruneRevoked, w.h.revoked, w.h.markRevoked) {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// record adds one event to the batch's, at the batch's wall time (at, if
// not zero); writeHistory writes them in the batch's transaction, before
// its COMMIT. Nothing with the history off.
func (b *batch) record(kind lease.EventKind, name string, tok token.Token, owner, reason, by string, at time.Time) error {
	if b.s.history.max == 0 {
		return nil
	}
	if at.IsZero() {
		at = b.wall
	}
	b.events = append(b.events, event{at.UnixNano(), kind, name, tok, owner, reason, by})
	return nil
}

// writeHistory writes the batch's events, in their order, as one row (a
// row per rowEvents): part of the batch's transaction, so an event is
// committed exactly when the change it records is, and one statement per
// batch however many events it made.
func (b *batch) writeHistory() error {
	for evs := b.events; len(evs) > 0; {
		n := min(len(evs), rowEvents)
		at := b.wall.UnixNano()
		for _, e := range evs[:n] {
			at = max(at, e.at)
		}
		buf := b.s.w.h.buf[:0]
		for _, e := range evs[:n] {
			buf = appendEvent(buf, at, e)
		}
		b.s.w.h.buf = buf
		if _, err := b.s.w.h.add.ExecContext(b.ctx, at, n, buf); err != nil {
			return fmt.Errorf("write %d events of history: %w", n, err)
		}
		evs = evs[n:]
	}
	b.recorded += len(b.events)
	return nil
}

// recordExpiry records that the lease r on name expired (at its deadline).
func (b *batch) recordExpiry(name string, r row, reason string) error {
	return b.record(lease.EventExpire, name, r.token, r.owner, reason, "", b.render(r.expires))
}

// historyCommitted runs after a batch committed: once pruneEvery events
// were written since the last prune, it queues one.
func (s *Store) historyCommitted(b *batch) {
	if b.recorded == 0 {
		return
	}
	s.history.added += b.recorded
	if s.history.added < pruneEvery {
		return
	}
	s.history.added = 0
	o := newOp(opPrune)
	select {
	case s.ops <- o:
	default: // the queue is full: the next pruneEvery events queue one
	}
}

// prune deletes the oldest events past the retention, at most pruneChunk
// (one rowid range), and the revocations older than a day; res.n is how
// many events went and res.next is non-empty when there are more to go.
// The newest event always stays, so that seq (the rowid) keeps rising.
func (b *batch) prune(o *op) (result, error) {
	h := b.s.history
	if _, err := b.s.w.h.pruneRevoked.ExecContext(b.ctx, b.wall.Add(-lease.MaxTTL).UnixNano()); err != nil {
		return result{}, fmt.Errorf("prune revocations: %w", err)
	}
	var lo, hi sql.NullInt64
	if err := b.s.w.h.bounds.QueryRowContext(b.ctx).Scan(&lo, &hi); err != nil {
		return result{}, fmt.Errorf("prune history: %w", err)
	}
	if !hi.Valid {
		return result{}, nil
	}
	// Rows whose first event is at or below upto go (a row of up to
	// rowEvents events straddling it too: the history keeps at most
	// maxEvents).
	upto := hi.Int64 - int64(max(h.max, 1)) // with the history off, all but the newest
	if h.age > 0 {
		var young int64
		err := b.s.w.h.firstYoung.QueryRowContext(b.ctx, b.wall.Add(-h.age).UnixNano()).Scan(&young)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			upto = hi.Int64 - 1 // every row old: all but the newest event's row
		case err != nil:
			return result{}, fmt.Errorf("prune history: %w", err)
		default:
			upto = max(upto, young-1)
		}
	}
	if upto < lo.Int64 {
		return result{}, nil
	}
	end := min(upto, lo.Int64+pruneChunk-1)
	var last int64 // the newest row is never deleted
	if err := b.s.w.conn.QueryRowContext(b.ctx, "SELECT max(seq) FROM history").Scan(&last); err != nil {
		return result{}, fmt.Errorf("prune history: %w", err)
	}
	end = min(end, last-1)
	if end < lo.Int64 {
		return result{}, nil
	}
	res, err := b.s.w.h.prune.ExecContext(b.ctx, lo.Int64, end)
	if err != nil {
		return result{}, fmt.Errorf("prune history: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return result{}, fmt.Errorf("prune history: %w", err)
	}
	out := result{n: int(n)}
	if end < upto {
		out.next = "more"
	}
	return out, nil
}

// PruneHistory deletes the events past WithHistory's retention, a chunk
// per transaction, and returns how many. The store prunes by itself as
// events are written, and Sweep calls it; it is exported for tools and
// tests. Errors: ErrClosed, an error matching lease.ErrUnavailable, or
// ctx's error.
func (s *Store) PruneHistory(ctx context.Context) (int, error) {
	total := 0
	for range 1 << 20 {
		res := s.submit(ctx, newOp(opPrune))
		total += res.n
		if res.err != nil || res.next == "" {
			return total, res.err
		}
	}
	return total, nil
}

var _ lease.HistoryReader = (*Store)(nil)

// History returns one page of the history (see lease.HistoryReader), read
// from the read pool: it never waits for the writer.
//
// Errors: lease.ErrInvalid, ErrClosed, an error matching
// lease.ErrUnavailable, or ctx's error.
func (s *Store) History(ctx context.Context, req lease.HistoryRequest) (lease.HistoryPage, error) {
	if err := req.Validate(); err != nil {
		return lease.HistoryPage{}, fmt.Errorf("sqlite: history: %w", err)
	}
	select {
	case <-s.closing:
		return lease.HistoryPage{}, ErrClosed
	default:
	}
	var q strings.Builder
	var args []any
	q.WriteString("SELECT seq, at, n, events FROM history WHERE 1")
	if !req.Since.IsZero() {
		// No event of a row is later than its at.
		q.WriteString(" AND at >= ?")
		args = append(args, req.Since.UnixNano())
	}
	if req.After != 0 {
		if req.Newest {
			q.WriteString(" AND seq < ?")
		} else {
			q.WriteString(" AND seq + n > ?")
		}
		args = append(args, int64(req.After))
	}
	order := " ORDER BY seq"
	if req.Newest {
		order += " DESC"
	}
	q.WriteString(order)
	limit := req.PageLimit()
	page := lease.HistoryPage{Events: []lease.Event{}}
	err := s.read(ctx, "history", func() error {
		page.Events = page.Events[:0]
		rows, err := s.rdb.QueryContext(ctx, q.String(), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() && len(page.Events) <= limit {
			var seq, at int64
			var n int
			var blob []byte
			if err := rows.Scan(&seq, &at, &n, &blob); err != nil {
				return err
			}
			evs, err := decodeEvents(seq, at, n, blob)
			if err != nil {
				return err
			}
			if req.Newest {
				slices.Reverse(evs)
			}
			for _, e := range evs {
				if req.After != 0 && (!req.Newest && e.Seq <= req.After || req.Newest && e.Seq >= req.After) || !req.Match(e) {
					continue
				}
				page.Events = append(page.Events, e)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return lease.HistoryPage{}, fmt.Errorf("sqlite: history: %w", err)
	}
	if len(page.Events) > limit {
		page.Events = page.Events[:limit]
		page.Next = page.Events[limit-1].Seq
	}
	return page, nil
}

// recordRow records an event of the lease row on name with tok, its owner
// read from the row itself, before the batch deletes it.
func (b *batch) recordRow(kind lease.EventKind, name string, tok token.Token, reason string) error {
	if b.s.history.max == 0 {
		return nil
	}
	var owner string
	err := b.s.w.conn.QueryRowContext(b.ctx, "SELECT owner FROM leases WHERE name = ? AND token = ?", name, int64(tok)).Scan(&owner)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("record %s of %q: %w", kind, name, err)
	}
	return b.record(kind, name, tok, owner, reason, "", time.Time{})
}
