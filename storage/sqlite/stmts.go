package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
)

// hook calls the process-wide test hook and then this store's, at point.
func (w *writer) hook(point string) {
	hook(point)
	if h := w.testHook.Load(); h != nil {
		(*h)(point)
	}
}

// writer is the writer goroutine's connection and its prepared statements,
// prepared once at Open and reused by every batch. A grant on a free name
// and a release are one statement each (a SELECT comes first only when the
// name turns out to be held, and for renew), plus, per batch, BEGIN, one
// read of the batch's head (the counter, the epoch, whether anyone waits),
// the counter write and COMMIT.
//
// The statements on the grant path are written for the driver's cheapest
// path: plain ? parameters (a ?NNN parameter costs the driver a string per
// bind), upserts that read excluded.* instead of binding values twice,
// Exec with RowsAffected rather than RETURNING (SQLite keeps a RETURNING
// statement's rows in a temporary b-tree it opens and closes each time:
// three times the cost of the DELETE itself) and rather than a query (the
// driver builds a rows object, its column names and types, per query).
type writer struct {
	conn *sql.Conn

	// testHook, when set (by tests, through export_test.go), is called at
	// this store's named points (see hooks.go) after the process-wide one.
	testHook atomic.Pointer[func(point string)]

	begin, commit, rollback *sql.Stmt
	head                    *sql.Stmt // epoch → counter, whether the file's epoch is it, whether a waiters row exists, whether a name is watched
	setCounter              *sql.Stmt
	lease                   *sql.Stmt    // name → holder, owner, token, ttl_ms, expires_at, lock_delay_ms
	grant                   *sql.Stmt    // upsert a new grant
	grantFree               *sql.Stmt    // insert a new grant unless a live or lock-delayed row is there (no waiters row in the file)
	grantFreeUnqueued       *sql.Stmt    // the same, unless the name also has a waiters row
	extend                  *sql.Stmt    // new ttl and expiry of a held lease
	extendDelay             *sql.Stmt    // new ttl, expiry and lock-delay of a held lease (re-acquire)
	dropHeld                *sql.Stmt    // delete a live lease row held by holder with token
	sweep                   *sql.Stmt    // delete the next expired rows after a name, at most a chunk (sweep.go)
	put                     *sql.Stmt    // upsert a fenced value unless its token is lower
	kvToken                 *sql.Stmt    // key → highest token
	ended, markWatched      *sql.Stmt    // a watched name's last ended token; a name marked watched (ended.go)
	h                       historyStmts // history.go

	// The waiters queue (queue.go).
	waitersOf, waiterRow, enqueue *sql.Stmt
	dropWaiter, markWaiter        *sql.Stmt
	lapsed                        *sql.Stmt
}

func (w *writer) prepare(ctx context.Context) error {
	for _, p := range []struct {
		stmt  **sql.Stmt
		query string
	}{
		{&w.begin, "BEGIN IMMEDIATE"},
		{&w.commit, "COMMIT"},
		{&w.rollback, "ROLLBACK"},
		// The batch's head: the counter, and the file's epoch compared
		// with the clock's in SQL (no string comes back), and whether
		// anyone waits in the file at all, and whether any name is
		// watched (ended.go).
		{&w.head, `SELECT c.value, m.value = ?, EXISTS (SELECT 1 FROM waiters), EXISTS (SELECT 1 FROM ended)
			FROM counter c, meta m WHERE c.id = 1 AND m.key = 'epoch'`},
		{&w.setCounter, "UPDATE counter SET value = ? WHERE id = 1"},
		{&w.lease, "SELECT holder, owner, token, ttl_ms, expires_at, lock_delay_ms FROM leases WHERE name = ?"},
		{&w.grant, `INSERT INTO leases (name, holder, owner, token, ttl_ms, granted_at, expires_at, lock_delay_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET ` + upsertLease},
		// A free name only: an expired row is taken over by acquire's
		// slow path, which records its expiry in the history (history.go).
		{&w.grantFree, `INSERT INTO leases (name, holder, owner, token, ttl_ms, granted_at, expires_at, lock_delay_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (name) DO NOTHING`},
		// While the file has waiters rows: none for the name either (the
		// name is the 9th parameter); a queue, even of dead rows, goes by
		// the slow path (queue.go).
		{&w.grantFreeUnqueued, `INSERT INTO leases (name, holder, owner, token, ttl_ms, granted_at, expires_at, lock_delay_ms)
			SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM waiters WHERE name = ?)
			ON CONFLICT (name) DO NOTHING`},
		{&w.extend, "UPDATE leases SET ttl_ms = ?, expires_at = ? WHERE name = ?"},
		{&w.extendDelay, "UPDATE leases SET ttl_ms = ?, expires_at = ?, lock_delay_ms = ? WHERE name = ?"},
		{&w.dropHeld, "DELETE FROM leases WHERE name = ? AND holder = ? AND token = ? AND expires_at > ?"},
		{&w.sweep, `DELETE FROM leases WHERE name IN (SELECT name FROM leases
			WHERE name > ?1 AND expires_at + lock_delay_ms * 1000000 <= ?2 ORDER BY name LIMIT ?3) RETURNING name, token, owner, expires_at`},
		{&w.put, `INSERT INTO kv (key, value, token, updated_at) VALUES (?1, ?2, ?3, ?4)
			ON CONFLICT (key) DO UPDATE SET value = ?2, token = ?3, updated_at = ?4
			WHERE ?3 >= kv.token`},
		{&w.kvToken, "SELECT token FROM kv WHERE key = ?"},
		{&w.ended, "UPDATE ended SET token = ?, expires_at = ? WHERE name = ?"},
		{&w.markWatched, "INSERT INTO ended (name, token, expires_at) VALUES (?, 0, 0) ON CONFLICT (name) DO NOTHING"},
		{&w.waitersOf, `SELECT seq, holder, owner, ttl_ms, lock_delay_ms, process
			FROM waiters WHERE name = ? AND token = 0 ORDER BY seq LIMIT ?`},
		{&w.waiterRow, "SELECT token, lease_expires FROM waiters WHERE seq = ?"},
		{&w.enqueue, `INSERT INTO waiters (name, holder, owner, ttl_ms, lock_delay_ms, process)
			VALUES (?, ?, ?, ?, ?, ?)`},
		{&w.dropWaiter, "DELETE FROM waiters WHERE seq = ?"},
		{&w.markWaiter, "UPDATE waiters SET token = ?, lease_expires = ?, granted_by = ? WHERE seq = ?"},
		// An unclaimed grant to a waiter, past the claim window: the
		// waiter's row is still marked with the lease's token.
		{&w.lapsed, `SELECT w.seq, l.token, w.granted_by FROM leases l JOIN waiters w ON w.name = l.name AND w.token = l.token
			WHERE l.name = ? AND l.granted_at <= ?`},
	} {
		st, err := w.conn.PrepareContext(ctx, p.query)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", p.query, err)
		}
		*p.stmt = st
	}
	return w.prepareHistory(ctx)
}

// upsertLease sets every column of a lease row from the row the INSERT
// proposed.
const upsertLease = `holder = excluded.holder, owner = excluded.owner, token = excluded.token,
	ttl_ms = excluded.ttl_ms, granted_at = excluded.granted_at, expires_at = excluded.expires_at,
	lock_delay_ms = excluded.lock_delay_ms`

func (w *writer) close() error {
	var errs []error
	for _, st := range []*sql.Stmt{w.begin, w.commit, w.rollback, w.head, w.setCounter,
		w.lease, w.grant, w.grantFree, w.grantFreeUnqueued, w.extend, w.extendDelay, w.dropHeld, w.sweep, w.put, w.kvToken, w.ended, w.markWatched,
		w.waitersOf, w.waiterRow, w.enqueue, w.dropWaiter, w.markWaiter, w.lapsed} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	errs = append(errs, w.closeHistory())
	if w.conn != nil {
		errs = append(errs, w.conn.Close())
	}
	return errors.Join(errs...)
}
