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
// writer queues a prune (opPrune, nobody waiting on it) once pruneEvery
// events were written since the last — or, after a prune that found
// nothing to delete, once the history could be full (at most
// pruneQuietMax events later) or its oldest row comes of age, so that a
// history with room costs the grant path no prune — and Sweep's last
// chunk prunes one chunk too; each prune deletes at most pruneChunk rows, oldest first,
// so that no transaction grows the -wal much. The newest event is never
// pruned by age, so that seq keeps rising (it is the rowid).

// WithHistory keeps at most maxEvents events of history, none older than
// maxAge (defaults lease.DefaultHistoryMaxEvents and
// lease.DefaultHistoryMaxAge: 1 to 5 MB of the file, as names share
// prefixes or not: history_codec.go). maxEvents 0 turns
// the history off (nothing is written; History answers what is left until a
// prune clears it); maxAge 0 keeps events of any age.
func WithHistory(maxEvents int, maxAge time.Duration) Option {
	return func(cfg *config) { cfg.historyMax, cfg.historyAge = maxEvents, maxAge }
}

const (
	pruneEvery = 1024 // events written between two prunes the writer queues
	pruneChunk = 4096 // the most rows one prune deletes
	// pruneQuietMax bounds the events a process writes without queueing a
	// prune while the history has room: other processes on the file fill
	// the room too, and each counts only its own events.
	pruneQuietMax = 16 * pruneEvery
)

// historyState is the store's retention and the writer goroutine's count
// of events since the last prune. A prune that found nothing to delete
// says how long the next one would find nothing too (quiet, quietUntil),
// so that a history with room costs the grant path no prune at all.
type historyState struct {
	max   int
	age   time.Duration
	added int // the writer goroutine's only, as the two below

	quiet      int   // events before a prune can delete any (0: pruneEvery)
	quietUntil int64 // wall Unix ns when the oldest event kept comes of age (0: never, or not known)
}

// due reports whether the writer should queue a prune, added events after
// the last one, at wall (Unix ns).
func (h *historyState) due(wall int64) bool {
	if h.added >= max(pruneEvery, h.quiet) {
		return true
	}
	return h.quiet > 0 && h.quietUntil != 0 && wall >= h.quietUntil
}

// historyStmts are the writer's prepared statements of the history.
type historyStmts struct {
	add, bounds, firstYoung, prune     *sql.Stmt
	pruneRevoked, revoked, markRevoked *sql.Stmt

	buf    []byte  // the writer's buffer for a row's events
	events []event // the writer's buffer for a batch's events (batch.events)
}

// rowEvents is the most events one history row holds, and rowBytes about
// the most bytes: a row stays within a 4 KiB page.
const (
	rowEvents = 1024
	rowBytes  = 3000
)

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
		{&w.h.bounds, `SELECT (SELECT min(seq) FROM history), (SELECT seq + n - 1 FROM history WHERE seq = (SELECT max(seq) FROM history)),
			(SELECT at FROM history WHERE seq = (SELECT min(seq) FROM history))`},
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
	if b.events == nil { // the writer's buffer, given back by writeHistory
		b.events = b.s.w.h.events[:0]
	}
	b.events = append(b.events, event{at.UnixNano(), kind, name, tok, owner, reason, by})
	return nil
}

// writeHistory writes the batch's events, in their order, in as few rows
// as fit in a page each (rowBytes): part of the batch's transaction, so an
// event is committed exactly when the change it records is, and one
// statement per row, not per event.
func (b *batch) writeHistory() error {
	if len(b.events) == 0 {
		return nil
	}
	at := b.wall.UnixNano()
	for _, e := range b.events {
		at = max(at, e.at)
	}
	var c rowCoder
	buf, n := c.start(b.s.w.h.buf[:0]), 0
	flush := func() error {
		if _, err := b.s.w.h.add.ExecContext(b.ctx, at, n, buf); err != nil {
			return fmt.Errorf("write %d events of history: %w", n, err)
		}
		buf, n = c.start(buf[:0]), 0
		return nil
	}
	for _, e := range b.events {
		start := len(buf)
		buf = c.appendEvent(buf, at, e)
		if n > 0 && (len(buf) > rowBytes || n == rowEvents) {
			// The row stays within a page: a longer one spills into
			// overflow pages, which cost far more than another row. The
			// event begins the next row, encoded again: its encoding
			// depends on the event before it in its row.
			buf = buf[:start]
			if err := flush(); err != nil {
				return err
			}
			buf = c.appendEvent(buf, at, e)
		}
		n++
	}
	if err := flush(); err != nil {
		return err
	}
	b.s.w.h.buf = buf
	b.recorded += len(b.events)
	clear(b.events) // no names or owners kept alive by the buffer
	b.s.w.h.events = b.events[:0]
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
	if !s.history.due(b.wall.UnixNano()) {
		return
	}
	s.history.added, s.history.quiet = 0, 0
	o := newOp(opPrune)
	select {
	case s.ops <- o:
	default: // the queue is full: the next pruneEvery events queue one
	}
}

// quietFor notes, after a prune that found nothing to delete, when the next
// could: once the history (kept events now) is full, or its oldest row
// (written at oldest, wall Unix ns) is older than the retention's age.
func (h *historyState) quietFor(kept, oldest int64) {
	h.quiet = int(min(max(int64(h.max)-kept, pruneEvery), pruneQuietMax))
	h.quietUntil = 0
	if h.age > 0 && kept > 0 {
		h.quietUntil = oldest + int64(h.age)
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
	var lo, hi, oldest sql.NullInt64
	if err := b.s.w.h.bounds.QueryRowContext(b.ctx).Scan(&lo, &hi, &oldest); err != nil {
		return result{}, fmt.Errorf("prune history: %w", err)
	}
	if !hi.Valid {
		b.s.history.quietFor(0, 0)
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
		// Nothing to delete until the history is full or its oldest row
		// comes of age.
		b.s.history.quietFor(hi.Int64-lo.Int64+1, oldest.Int64)
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
	if err := s.fillOwners(ctx, page.Events); err != nil {
		return lease.HistoryPage{}, fmt.Errorf("sqlite: history: %w", err)
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

// fillOwners sets the owner of the release events of events, which a
// release does not read (a RETURNING would cost every release): the owner
// is the grant's of the same name and token, found in the page or in the
// rows before the release's, at most fillRows of them per page.
func (s *Store) fillOwners(ctx context.Context, events []lease.Event) error {
	type key struct {
		name string
		tok  token.Token
	}
	owners := map[key]string{}
	for _, e := range events {
		if e.Kind == lease.EventGrant {
			owners[key{e.Name, e.Token}] = e.Owner
		}
	}
	budget := fillRows
	for i, e := range events {
		if e.Kind != lease.EventRelease || e.Owner != "" {
			continue
		}
		if o, ok := owners[key{e.Name, e.Token}]; ok {
			events[i].Owner = o
			continue
		}
		if budget <= 0 {
			continue
		}
		err := s.read(ctx, "history", func() error {
			rows, err := s.rdb.QueryContext(ctx, "SELECT seq, at, n, events FROM history WHERE seq <= ? ORDER BY seq DESC LIMIT ?",
				int64(e.Seq), budget)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				budget--
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
				for _, g := range evs {
					if g.Kind == lease.EventGrant {
						owners[key{g.Name, g.Token}] = g.Owner
					}
				}
				if o, ok := owners[key{e.Name, e.Token}]; ok {
					events[i].Owner = o
					return nil
				}
			}
			return rows.Err()
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// fillRows bounds the history rows fillOwners reads per page.
const fillRows = 512
