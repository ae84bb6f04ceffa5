package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
	add, prune, pruneRevoked, revoked, markRevoked *sql.Stmt
}

func (w *writer) prepareHistory(ctx context.Context) error {
	for _, p := range []struct {
		stmt  **sql.Stmt
		query string
	}{
		{&w.h.add, `INSERT INTO history (at, kind, name, token, owner, reason, revoked_by) VALUES (?, ?, ?, ?, ?, ?, ?)`},
		{&w.h.prune, `DELETE FROM history WHERE seq IN (SELECT seq FROM history
			WHERE seq <= (SELECT max(seq) FROM history) - ?1 OR (at < ?2 AND seq < (SELECT max(seq) FROM history))
			ORDER BY seq LIMIT ?3)`},
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
	for _, st := range []*sql.Stmt{w.h.add, w.h.prune, w.h.pruneRevoked, w.h.revoked, w.h.markRevoked} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// record writes one event in the batch's transaction, at the batch's wall
// time (at, if not zero). Nothing with the history off.
func (b *batch) record(kind lease.EventKind, name string, tok token.Token, owner, reason, by string, at time.Time) error {
	if b.s.history.max == 0 {
		return nil
	}
	if at.IsZero() {
		at = b.wall
	}
	if _, err := b.s.w.h.add.ExecContext(b.ctx, at.UnixNano(), string(kind), name, int64(tok), owner, reason, by); err != nil {
		return fmt.Errorf("record %s of %q: %w", kind, name, err)
	}
	b.recorded++
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

// prune deletes the oldest events past the retention, at most pruneChunk,
// and the revocations older than a day; res.n is how many events went and
// res.next is non-empty when there may be more.
func (b *batch) prune(o *op) (result, error) {
	h := b.s.history
	keep := int64(h.max)
	cutoff := int64(-1 << 63)
	if h.age > 0 {
		cutoff = b.wall.Add(-h.age).UnixNano()
	}
	res, err := b.s.w.h.prune.ExecContext(b.ctx, keep, cutoff, pruneChunk)
	if err != nil {
		return result{}, fmt.Errorf("prune history: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return result{}, fmt.Errorf("prune history: %w", err)
	}
	if _, err := b.s.w.h.pruneRevoked.ExecContext(b.ctx, b.wall.Add(-lease.MaxTTL).UnixNano()); err != nil {
		return result{}, fmt.Errorf("prune revocations: %w", err)
	}
	out := result{n: int(n)}
	if n == pruneChunk {
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
	q.WriteString("SELECT seq, at, kind, name, token, owner, reason, revoked_by FROM history WHERE 1")
	if req.Name != "" {
		q.WriteString(" AND name = ?")
		args = append(args, req.Name)
	}
	if !req.Since.IsZero() {
		q.WriteString(" AND at >= ?")
		args = append(args, req.Since.UnixNano())
	}
	order := " ORDER BY seq"
	if req.After != 0 {
		if req.Newest {
			q.WriteString(" AND seq < ?")
		} else {
			q.WriteString(" AND seq > ?")
		}
		args = append(args, int64(req.After))
	}
	if req.Newest {
		order += " DESC"
	}
	limit := req.PageLimit()
	q.WriteString(order + " LIMIT ?")
	args = append(args, limit+1)
	page := lease.HistoryPage{Events: []lease.Event{}}
	err := s.read(ctx, "history", func() error {
		page.Events = page.Events[:0]
		rows, err := s.rdb.QueryContext(ctx, q.String(), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e lease.Event
			var seq, at, tok int64
			var kind string
			if err := rows.Scan(&seq, &at, &kind, &e.Name, &tok, &e.Owner, &e.Reason, &e.By); err != nil {
				return err
			}
			e.Seq, e.Time, e.Kind, e.Token = uint64(seq), time.Unix(0, at).UTC(), lease.EventKind(kind), token.Token(tok)
			page.Events = append(page.Events, e)
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

// recordRow records an event of the lease row on name with tok, read from
// the row itself (its owner), before the batch deletes it.
func (b *batch) recordRow(kind lease.EventKind, name string, tok token.Token, reason string) error {
	if b.s.history.max == 0 {
		return nil
	}
	if _, err := b.s.w.conn.ExecContext(b.ctx, `INSERT INTO history (at, kind, name, token, owner, reason, revoked_by)
		SELECT ?, ?, name, token, owner, ?, '' FROM leases WHERE name = ? AND token = ?`,
		b.wall.UnixNano(), string(kind), reason, name, int64(tok)); err != nil {
		return fmt.Errorf("record %s of %q: %w", kind, name, err)
	}
	b.recorded++
	return nil
}
